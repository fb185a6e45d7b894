import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { runCli } from '../../../cli/main.ts';
import type { CliIO } from '../../../cli/io.ts';
import { assertNotAtRest, startTestRuntime } from '../../runtime/helpers.ts';

/**
 * Issue 3: team secret values appear nowhere outside the encrypted column. Known values are set
 * through `factory secret create|update`, the example factory is built, planned and applied, its
 * webhooks listed and shown, deliveries authenticated with each value (bearer token, URL token,
 * GitHub signature), and then every output is searched for every value: the snapshot and the
 * saved plan, all CLI output, the API responses, the runtime's debug-level logs, and the database
 * files (plain, UTF-16 and base64 forms).
 */

const ROOT = resolve(import.meta.dirname, '../../..');
const CI_UID = 'wh_examplecibuilds2345abcdefg';
const ALERTS_UID = 'wh_examplealerts2345abcdefghi';
const GITHUB_UID = 'wh_examplegithub2345abcdefghi';

const VALUES = {
  'ci-webhook-token': 'ci-canary-4f1d9a0b7e2c6d5a8b3f1e0d9c7a',
  'alerts-url-token': 'alerts-canary-9e8d7c6b5a4f3e2d1c0b9a8f7e',
  'github-webhook-secret': 'github-canary 0b1c2d3e with spaces',
};
const UPDATED = 'ci-canary-updated-6a5b4c3d2e1f0a9b8c7d';

test('secret values appear in no snapshot, plan, CLI output, API response, log line or database file', async () => {
  const rt = await startTestRuntime();
  const work = mkdtempSync(join(tmpdir(), 'factory-secret-leaks-'));
  const outputs: string[] = [];
  const cli = async (args: string[], stdin = ''): Promise<string> => {
    let out = '';
    let err = '';
    const io: CliIO = {
      stdout: (s) => void (out += s),
      stderr: (s) => void (err += s),
      env: { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey, NO_COLOR: '1' },
      cwd: work,
      stdin: Readable.from([stdin]),
      stdinIsTTY: false,
      stdoutIsTTY: false,
    };
    const code = await runCli(args, io);
    outputs.push(out, err);
    assert.equal(code, 0, `factory ${args.join(' ')}: ${err}`);
    return out;
  };
  const api = async (path: string) => {
    const res = await rt.fetch(path);
    const text = await res.text();
    outputs.push(text);
    assert.equal(res.status, 200, `${path}: ${text}`);
    return text;
  };
  try {
    cpSync(join(ROOT, 'examples', 'factory'), join(work, 'example'), { recursive: true });
    for (const [name, value] of Object.entries(VALUES)) await cli(['secret', 'create', name], value + '\n');

    await cli(['build', 'example', '-o', 'snapshot.json']);
    await cli(['plan', 'example', '--out', 'plan.json']);
    await cli(['apply', 'example', '--revision', 'r1']);
    await cli(['secret', 'update', 'ci-webhook-token'], UPDATED + '\n');
    await cli(['webhook', 'disable', 'ci', '--factory', 'example']);
    await cli(['webhook', 'enable', 'ci', '--factory', 'example']);
    for (const args of [['webhook', 'list'], ['webhook', 'list', '--json'], ['webhook', 'show', 'ci', '--json'], ['webhook', 'show', 'alerts'], ['secret', 'list'], ['secret', 'list', '--json'], ['key', 'list', '--json']]) {
      await cli(args);
    }
    for (const path of ['/api/v1/webhooks', `/api/v1/webhooks/${CI_UID}`, `/api/v1/webhooks/${ALERTS_UID}`, '/api/v1/secrets', '/api/v1/secrets/ci-webhook-token', '/api/v1/automations']) {
      await api(path);
    }

    // Deliveries authenticated with each value: the credentials reach the runtime, and must stop there.
    const body = '{"status":"passed","branch":"feature","pipeline":"lint"}';
    const deliveries = [
      fetch(`${rt.url}/webhooks/w/${CI_UID}`, { method: 'POST', headers: { Authorization: `Bearer ${UPDATED}`, 'X-CI-Build-Id': 'b-1', 'Content-Type': 'application/json' }, body }),
      fetch(`${rt.url}/webhooks/w/${ALERTS_UID}/${VALUES['alerts-url-token']}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"status":"resolved"}' }),
      fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'X-GitHub-Event': 'ping',
          'X-GitHub-Delivery': '5b1e1c3a-0000-4000-8000-000000000001',
          'X-Hub-Signature-256': 'sha256=' + createHmac('sha256', VALUES['github-webhook-secret']).update('{"zen":"hi"}').digest('hex'),
        },
        body: '{"zen":"hi"}',
      }),
      // A wrong credential that carries a value in the wrong place is logged as rejected, not echoed.
      fetch(`${rt.url}/webhooks/w/${CI_UID}`, { method: 'POST', headers: { Authorization: `Bearer ${VALUES['ci-webhook-token']}` }, body }),
    ];
    assert.deepEqual((await Promise.all(deliveries)).map((r) => r.status), [202, 202, 202, 401]);
    await cli(['delivery', 'list', 'ci', '--json']);
    await cli(['delivery', 'list', 'alerts', '--json']);

    const files = ['snapshot.json', 'plan.json'].map((f) => join(work, f));
    const texts: [string, string][] = [
      ...files.map((f): [string, string] => [f, readFileSync(f, 'utf8')]),
      ['CLI output and API responses', outputs.join('\n')],
      ['the logs', rt.logs.text],
    ];
    assert.ok(rt.logs.lines.length > 20, 'the logs were captured');
    assert.match(readFileSync(files[0], 'utf8'), /"secretName":"ci-webhook-token"/, 'the snapshot names the secret');
    for (const value of [...Object.values(VALUES), UPDATED]) {
      for (const [where, text] of texts) assert.ok(!text.includes(value), `${value} in ${where}`);
    }
    assertNotAtRest(rt, [...Object.values(VALUES), UPDATED]);
    // The values are there, sealed: the runtime itself can still open them.
    assert.equal(rt.store.secrets.reveal('ci-webhook-token'), UPDATED);
  } finally {
    await rt.stop();
    rmSync(work, { recursive: true, force: true });
  }
});
