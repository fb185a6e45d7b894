import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { writeBenchRepo } from '../../../bench/compile.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { startServer, type RunningServer } from '../../../runtime/server.ts';
import { runCliInProcess, terminalEnv, type CliResult } from '../../helpers/cli.ts';

/**
 * docs/plan-apply.md#large-factories: a factory of 20 webhooks and 5,000 automations (a snapshot
 * of about 2.7 MB, past the 1 MiB of the other routes) plans and applies through the CLI
 * (in-process, test/helpers/cli.ts), which sends it gzip-compressed; a gzip bomb is a 413 and
 * gzip elsewhere is a 415.
 */

const AUTOMATIONS = 5000;

let server: RunningServer;
let tmp: string;
let repo: string;
let apiKey: string;

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'factory-apply-size-'));
  repo = join(tmp, 'repo');
  await writeBenchRepo(repo, { webhooks: 20, automations: AUTOMATIONS, name: 'big' });
  server = await startServer(parseConfig({ port: 0, dataDir: join(tmp, 'data'), logLevel: 'silent', executor: 'direct' }, {}, tmp));
  apiKey = readFileSync(server.adminKeyPath, 'utf8').trim();
  for (let i = 0; i < 20; i++) {
    const res = await post('/api/v1/secrets', JSON.stringify({ name: `hook-${i}-token`, value: `token-${i}-${'x'.repeat(32)}` }));
    assert.equal(res.status, 201, await res.text());
  }
});

after(async () => {
  await server?.close();
  rmSync(tmp, { recursive: true, force: true });
});

function cli(args: string[]): Promise<CliResult> {
  return runCliInProcess(args, { cwd: tmp, env: terminalEnv({ FACTORY_SERVER: server.url, FACTORY_API_KEY: apiKey }) });
}

const post = (path: string, body: Buffer | string, headers: Record<string, string> = {}) =>
  fetch(server.url + path, { method: 'POST', headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers }, body });

test('factory plan and apply of 20 webhooks and 5,000 automations succeed against a real runtime', async () => {
  const plan = await cli(['plan', 'repo', '--json']);
  assert.equal(plan.code, 0, plan.stderr);
  const planned = JSON.parse(plan.stdout) as { changed: boolean; summary: { create: number } };
  assert.equal(planned.changed, true);
  assert.ok(planned.summary.create >= AUTOMATIONS + 20, `creates: ${planned.summary.create}`);

  const apply = await cli(['apply', 'repo', '--json']);
  assert.equal(apply.code, 0, apply.stderr);
  const applied = JSON.parse(apply.stdout) as { applied: boolean; webhooks: unknown[] };
  assert.equal(applied.applied, true);
  assert.equal(applied.webhooks.length, 20);

  const listed = await fetch(`${server.url}/api/v1/automations?factory=big`, { headers: { Authorization: `Bearer ${apiKey}` } });
  assert.equal(listed.status, 200);
  const automations = (await listed.json()) as { automations: unknown[] };
  assert.equal(automations.automations.length, AUTOMATIONS);

  const again = await cli(['plan', 'repo', '--detailed-exitcode']);
  assert.equal(again.code, 0, `a second plan has no changes: ${again.stdout}${again.stderr}`);
});

test('a gzip body that inflates past 32 MiB is a 413, stopped at the cap', async () => {
  // 40 MiB of spaces compress to about 40 KB.
  const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20));
  assert.ok(bomb.length < 1024 * 1024);
  const res = await post('/api/v1/factories/big/plan', bomb, { 'Content-Encoding': 'gzip' });
  assert.equal(res.status, 413);
  const problem = (await res.json()) as { code: string; detail: string };
  assert.equal(problem.code, 'payload_too_large');
  assert.match(problem.detail, /33554432 bytes once decompressed/);
});

test('plan takes an uncompressed snapshot over 1 MiB too; bad gzip is a 400; other encodings are a 415', async () => {
  const built = await cli(['build', 'repo', '--out', join(tmp, 'snapshot.json')]);
  assert.equal(built.code, 0, built.stderr);
  const snapshot = readFileSync(join(tmp, 'snapshot.json'), 'utf8');
  const body = `{"snapshot":${snapshot}}`;
  assert.ok(Buffer.byteLength(body) > 1024 * 1024, `the snapshot is ${Buffer.byteLength(body)} bytes`);
  const plain = await post('/api/v1/factories/big/plan', body);
  assert.equal(plain.status, 200, await plain.clone().text());

  const notGzip = await post('/api/v1/factories/big/plan', '{"snapshot":{}}', { 'Content-Encoding': 'gzip' });
  assert.equal(notGzip.status, 400);
  assert.equal(((await notGzip.json()) as { code: string }).code, 'invalid_json');

  const brotli = await post('/api/v1/factories/big/apply', '{}', { 'Content-Encoding': 'br' });
  assert.equal(brotli.status, 415);
  assert.equal(((await brotli.json()) as { code: string }).code, 'unsupported_media_type');
});

test('gzip on any other route is a 415 with a sentence saying to send it uncompressed', async () => {
  const res = await post('/api/v1/keys', gzipSync('{"name":"k","kind":"agent","scopes":["runs"]}'), { 'Content-Encoding': 'gzip' });
  assert.equal(res.status, 415);
  assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
  const problem = (await res.json()) as { code: string; detail: string };
  assert.equal(problem.code, 'unsupported_media_type');
  assert.match(problem.detail, /send the body uncompressed/);
});
