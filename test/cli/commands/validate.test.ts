import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../../cli/main.ts';
import { bufferIO } from '../helpers.ts';
import { execCli } from '../../helpers/cli.ts';

test('the example repo validates clean (exit 0) and says what waits for plan', async () => {
  const io = bufferIO();
  assert.equal(await runCli(['validate', 'examples/factory'], io), 0);
  assert.match(io.out, /no problems found/);
  assert.match(io.out, /Plan checks with the runtime: that secret names exist, url_token secret values, webhook UIDs and environment ownership/);
});

test('a broken tree: exit 1, every problem as path:line:col: severity code: message', async () => {
  const io = bufferIO();
  assert.equal(await runCli(['validate', 'test/fixtures/broken'], io), 1);
  const lines = io.out.split('\n');
  assert.ok(lines.includes("test/fixtures/broken/webhooks/tok.yaml:3:1: error webhook.unknown_key: unknown key 'secretname' in this file; did you mean 'secretName'?"));
  assert.ok(lines.some((l) => l.startsWith('test/fixtures/broken/automations/fm.md:10:22: error filter.empty_in: ')));
  assert.ok(lines.some((l) => l.startsWith('test/fixtures/broken/automations/fm.md:2:14: error automation.unknown_environment: ')));
  assert.match(io.out, /24 errors, 5 warnings\./);
  assert.equal(io.err, '');
});

test('--format json is a list with file, line, column, code, pointer, severity, message', async () => {
  const io = bufferIO();
  assert.equal(await runCli(['validate', 'test/fixtures/broken', '--format', 'json'], io), 1);
  const rows = JSON.parse(io.out) as Record<string, unknown>[];
  assert.equal(rows.length, 29);
  assert.deepEqual(rows.find((r) => r.code === 'factory.unknown_key'), {
    file: 'test/fixtures/broken/factory.yaml',
    line: 2,
    column: 1,
    code: 'factory.unknown_key',
    pointer: '/descripton',
    severity: 'error',
    message: "unknown key 'descripton' in this file; did you mean 'description'?",
  });
});

test('github format is chosen inside GitHub Actions', async () => {
  const io = bufferIO({ GITHUB_ACTIONS: 'true' });
  assert.equal(await runCli(['validate', 'test/fixtures/broken'], io), 1);
  const lines = io.out.trimEnd().split('\n');
  assert.equal(lines.length, 29);
  assert.ok(lines.includes('::error file=test/fixtures/broken/webhooks/gh.yaml,line=3,col=19,title=webhook.invalid_value::/deliveryIdHeader \'bad header\' is not a valid HTTP header name'));
  assert.ok(lines.some((l) => l.startsWith('::error file=test/fixtures/broken/automations/fm.md,line=2,col=14,')));
  const usage = bufferIO();
  assert.equal(await runCli(['validate', '--format', 'xml'], usage), 2);
});

test('a repo that cannot be read: one sentence on stderr, exit 1, no stack trace', async () => {
  const io = bufferIO();
  assert.equal(await runCli(['validate', 'test/fixtures/no-factory'], io), 1);
  assert.equal(io.err, 'error: test/fixtures/no-factory has no factory.yaml, so it is not a factory repo\n');
  assert.equal(io.out, '');
});

test('a file that cannot be read is a diagnostic in every format, beside the other files\' problems, exit 1', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'factory-validate-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'factory.yaml'), Buffer.from([0x6e, 0x3a, 0x20, 0xff, 0x0a]));
  await mkdir(join(dir, 'webhooks'));
  await writeFile(join(dir, 'webhooks', 'a.yaml'), 'secretname: s\n');
  const utf8 = 'factory.yaml is not valid UTF-8 (at byte offset 3); save it as UTF-8';

  const text = bufferIO();
  assert.equal(await runCli(['validate', dir], text), 1);
  assert.equal(text.err, '');
  assert.deepEqual(text.out.split('\n').filter((l) => l.startsWith(dir)).map((l) => l.slice(dir.length + 1).split(': error')[0]), ['factory.yaml:1:4', 'webhooks/a.yaml:1:1', 'webhooks/a.yaml:1:1']);
  assert.ok(text.out.includes(`${dir}/factory.yaml:1:4: error file.invalid_encoding: ${utf8}\n`));

  const json = bufferIO();
  assert.equal(await runCli(['validate', dir, '--format', 'json'], json), 1);
  const rows = JSON.parse(json.out) as Record<string, unknown>[];
  assert.deepEqual(rows[0], { file: `${dir}/factory.yaml`, line: 1, column: 4, code: 'file.invalid_encoding', pointer: '', severity: 'error', message: utf8 });
  assert.deepEqual(rows.slice(1).map((r) => r.code), ['webhook.missing_key', 'webhook.unknown_key']);

  const github = bufferIO({ GITHUB_ACTIONS: 'true' });
  assert.equal(await runCli(['validate', dir], github), 1);
  assert.ok(github.out.split('\n').some((l) => l.startsWith(`::error file=${dir}/factory.yaml,line=1,col=4,title=file.invalid_encoding::`)), github.out);
});

test('a real child process (a smoke test of bin/factory.js): validate exits 0 on examples/factory, 1 on a broken repo', async () => {
  const good = await execCli(['validate', 'examples/factory']);
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stdout, /examples\/factory: no problems found/);
  const broken = await execCli(['validate', 'test/fixtures/yaml-features']);
  assert.equal(broken.code, 1);
  assert.doesNotMatch(broken.stderr, /\n\s+at /);
});
