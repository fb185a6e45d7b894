import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, createWriteStream, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { BIN, ROOT, startCli, terminalEnv } from '../helpers/cli.ts';

/**
 * cli/io.ts processIO: a reader that goes away (`factory ... | head -1`) ends the output quietly
 * (README.md#commands: no stack trace). Real child processes of bin/factory.js with stdout on a
 * pipe.
 */

const tmp = mkdtempSync(join(tmpdir(), 'factory-io-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

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
  const filter = startCli(['filter', 'test', 'filter.yaml', 'payload.fifo'], { cwd: dir });
  await new Promise<void>((resolve) => {
    filter.child.stdout.once('close', () => resolve());
    filter.child.stdout.destroy();
  });
  createWriteStream(fifo).end(payload);
  return { code: await filter.closed, stderr: filter.stderr() };
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
  const validate = startCli(['validate', 'noisy', '--format', 'json'], { cwd: tmp });
  validate.child.stdout.on('data', () => {
    if (validate.stdout().length >= 10) validate.child.stdout.destroy();
  });
  const code = await validate.closed;
  assert.doesNotMatch(validate.stderr(), /Error|EPIPE|\n\s+at /);
  assert.equal(code, 1, 'validate found errors, as usual');
});

/**
 * The rule of cli/io.ts's CliIO: commands read the environment, the working directory and stdin,
 * and write their output, only through the io (so tests run them in-process, concurrently), and
 * end with a return or a thrown CliError, never process.exit. Only the entry point (cli/main.ts)
 * and processIO (cli/io.ts) touch the process's own.
 */
test('no command under cli/ reads process.env, process.cwd() or stdin, writes to stdout/stderr, or exits by itself', () => {
  const root = join(import.meta.dirname, '../..');
  const files = (readdirSync(join(root, 'cli'), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(root, 'cli', f));
  const PROCESS_STATE = /\bprocess\.(env|cwd|chdir|stdin|stdout|stderr|exit|exitCode|argv)\b/;
  const uses = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .map((line, i) => ({ line: line.trim(), at: `${relative(root, file)}:${i + 1}` }))
      .filter(({ line }) => !line.startsWith('//') && !line.startsWith('*') && PROCESS_STATE.test(line));
  assert.ok(files.length > 20, 'the scan sees the command modules');
  assert.ok(uses(join(root, 'cli', 'io.ts')).length > 0, 'the scan finds processIO\'s own reads, so it can find others');
  const outside = files.filter((f) => !['io.ts', 'main.ts'].includes(relative(join(root, 'cli'), f))).flatMap(uses);
  assert.deepEqual(outside.map(({ at, line }) => `${at}: ${line}`), []);
});

test('output that cannot be written (a full disk) fails the command in one sentence, exit 1', { skip: existsSync('/dev/full') ? false : 'needs /dev/full (Linux)' }, async () => {
  const full = openSync('/dev/full', 'w');
  try {
    const child = spawn(process.execPath, [BIN, 'build', 'examples/factory'], { cwd: ROOT, env: terminalEnv(), stdio: ['ignore', full, 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const [code] = (await once(child, 'close')) as [number];
    assert.equal(stderr, 'error: cannot write to standard output: no space left on the device.\n');
    assert.equal(code, 1);
  } finally {
    closeSync(full);
  }
});
