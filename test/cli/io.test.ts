import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { terminalEnv } from './helpers.ts';

/**
 * cli/io.ts processIO: a reader that goes away (`factory ... | head -1`) ends the output quietly
 * (README.md#commands: no stack trace). Real child processes of bin/factory.js with stdout on a
 * pipe.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'factory.js');
const tmp = mkdtempSync(join(tmpdir(), 'factory-io-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const childEnv = () => terminalEnv();

/**
 * `factory filter test` with its payload read from a FIFO: the test closes the read end of the
 * child's stdout first and only then feeds the payload, so the child's first write meets a closed
 * pipe every time (EPIPE), with no race.
 */
async function filterWithClosedStdout(payload: string): Promise<{ code: number | null; stderr: string }> {
  const dir = mkdtempSync(join(tmp, 'epipe-'));
  writeFileSync(join(dir, 'filter.yaml'), 'action: [opened]\n');
  const fifo = join(dir, 'payload.fifo');
  execFileSync('mkfifo', [fifo]);
  const child = spawn(process.execPath, [BIN, 'filter', 'test', 'filter.yaml', 'payload.fifo'], { cwd: dir, env: childEnv() });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve) => {
    child.stdout.once('close', () => resolve());
    child.stdout.destroy();
  });
  createWriteStream(fifo).end(payload);
  return { code: await closed, stderr };
}

test('a closed stdout (EPIPE) ends quietly with the exit code of the command: 0 when it matches', async () => {
  const { code, stderr } = await filterWithClosedStdout('{"action":"opened"}');
  assert.equal(stderr, '');
  assert.equal(code, 0);
});

test('a closed stdout (EPIPE) ends quietly with the exit code of the command: 1 when it does not match', async () => {
  const { code, stderr } = await filterWithClosedStdout('{"action":"closed"}');
  assert.equal(stderr, '');
  assert.equal(code, 1);
});

test('validate --format json | head -c 10: many writes, the reader leaves after the first bytes, no trace', async () => {
  // A repo with many problems, so validate prints a lot of JSON.
  const repo = join(tmp, 'noisy');
  execFileSync('mkdir', ['-p', join(repo, 'webhooks')]);
  writeFileSync(join(repo, 'factory.yaml'), 'name: noisy\n');
  for (let i = 0; i < 200; i++) writeFileSync(join(repo, 'webhooks', `w${i}.yaml`), 'authMode: nope\nextra: 1\n');
  const child = spawn(process.execPath, [BIN, 'validate', 'noisy', '--format', 'json'], { cwd: tmp, env: childEnv() });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  let got = '';
  child.stdout.on('data', (d: Buffer) => {
    got += d.toString();
    if (got.length >= 10) child.stdout.destroy();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  assert.doesNotMatch(stderr, /Error|EPIPE|\n\s+at /);
  assert.equal(code, 1, 'validate found errors, as usual');
});
