import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, type SpawnOptions } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execCli, runCliInProcess, type CliResult } from '../../helpers/cli.ts';

/**
 * Issue 2: bad input never crashes the CLI. Each case runs `factory validate` on a repo holding one
 * kind of bad input: an unreadable file, invalid UTF-8, a 5 MB YAML file, YAML alias bombs, YAML
 * nested too deeply, a FIFO, a directory without factory.yaml. Each ends with exit 1 and says what
 * is wrong, with no stack trace: a file that cannot be read as a diagnostic beside the others, a
 * repo that cannot be read in one sentence. Most run in-process; the unreadable file (the CLI runs as another
 * user) and the FIFO (a regression would block forever) run the real bin/factory.js as a child.
 */

const tmp = mkdtempSync(join(tmpdir(), 'factory-bad-input-'));
// Other users may enter it: the unreadable-file case runs as `nobody` when the tests run as root.
chmodSync(tmp, 0o755);
after(() => rmSync(tmp, { recursive: true, force: true }));

/** `factory validate <dir>` in-process (test/helpers/cli.ts). */
function validate(dir: string): Promise<CliResult> {
  return runCliInProcess(['validate', dir], { cwd: tmp });
}

/**
 * `factory validate <dir>` as a child process. The kill timer only guards against a hang (it is
 * far longer than any of these takes); a killed child fails the exit-code assertion.
 */
function validateChild(dir: string, options: SpawnOptions = {}): Promise<CliResult> {
  return execCli(['validate', dir], { cwd: tmp, limitMs: 120_000, spawn: options });
}

/** A repo with a valid factory.yaml plus the given files (text, bytes, or a callback that makes them). */
function repo(name: string, files: Record<string, string | Buffer | ((path: string) => void)>): string {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'webhooks'), { recursive: true });
  writeFileSync(join(dir, 'factory.yaml'), 'name: t\n');
  for (const [path, content] of Object.entries(files)) {
    if (typeof content === 'function') content(join(dir, path));
    else writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** One sentence on stderr, nothing on stdout, exit 1. */
async function oneSentence(dir: string, expected: RegExp, run: (dir: string) => Promise<CliResult> = validate) {
  const r = await run(dir);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^error: [^\n]+\n$/, 'one line on stderr');
  assert.match(r.stderr, expected);
}

/**
 * The file's diagnostic on stdout, among the others (the webhook without secretName is still
 * reported), nothing on stderr, exit 1.
 */
async function fileDiagnostic(dir: string, expected: string, run: (dir: string) => Promise<CliResult> = validate) {
  const r = await run(dir);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, '');
  const problems = r.stdout.split('\n').filter((l) => l.startsWith(`${dir}/`));
  assert.deepEqual(problems, [`${dir}/${expected}`, `${dir}/webhooks/other.yaml:1:1: error webhook.missing_key: missing required key 'secretName' in this file`]);
}

const OTHER = { 'webhooks/other.yaml': 'description: no secret\n' };

/** Billion laughs: nine levels, each a list of nine aliases of the level before. */
function aliasBomb(): string {
  const names = 'abcdefghi';
  const lines = [`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`];
  for (let i = 1; i < names.length; i++) lines.push(`${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(',')}]`);
  return lines.join('\n') + '\n';
}

// Side by side, each in a repo of its own: the two child processes start while the others run.
describe('bad input to factory validate', { concurrency: true }, () => {
  test('an unreadable file: a diagnostic naming it, the other files still checked, exit 1', async () => {
    const dir = repo('unreadable', { 'webhooks/a.yaml': 'secretName: s\n', ...OTHER });
    chmodSync(join(dir, 'webhooks/a.yaml'), 0o000);
    // root reads any file whatever its mode, so as root the CLI runs as nobody.
    const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    await fileDiagnostic(dir, 'webhooks/a.yaml:1:1: error file.unreadable: cannot read webhooks/a.yaml: permission denied', (d) => validateChild(d, asNobody));
  });

  test('invalid UTF-8: a diagnostic at the bad byte, with its byte offset, exit 1', async () => {
    const dir = repo('utf8', { 'webhooks/a.yaml': Buffer.from([0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x4e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0xc3, 0x28, 0x0a]), ...OTHER });
    await fileDiagnostic(dir, 'webhooks/a.yaml:1:13: error file.invalid_encoding: webhooks/a.yaml is not valid UTF-8 (at byte offset 12); save it as UTF-8');
  });

  test('a 5 MB YAML file: file.too_large with its size and the limit, exit 1', async () => {
    const dir = repo('big', { 'webhooks/big.yaml': 'secretName: s\n' + '# padding\n'.repeat(512 * 1024), ...OTHER });
    await fileDiagnostic(dir, 'webhooks/big.yaml:1:1: error file.too_large: webhooks/big.yaml is 5242894 bytes; definitions files may be at most 1048576 bytes (1 MiB)');
  });

  test('a directory without factory.yaml, and one that does not exist: one sentence, exit 1', async () => {
    mkdirSync(join(tmp, 'no-factory', 'webhooks'), { recursive: true });
    writeFileSync(join(tmp, 'no-factory', 'webhooks', 'a.yaml'), 'secretName: s\n');
    await oneSentence('no-factory', /^error: no-factory has no factory\.yaml, so it is not a factory repo\n$/);
    await oneSentence('nowhere', /^error: nowhere does not exist\n$/);
  });

  test('a FIFO named like a definitions file is refused instead of read forever', async () => {
    const dir = repo('fifo', { 'webhooks/a.yaml': (path) => execFileSync('mkfifo', [path]), ...OTHER });
    await fileDiagnostic(dir, 'webhooks/a.yaml:1:1: error file.not_a_file: cannot read webhooks/a.yaml: it is not a regular file (a pipe, socket or device)', (d) => validateChild(d));
  });

  test('a YAML alias bomb: one line for its aliases and one for its anchors, never expanded, exit 1', async () => {
    const dir = repo('bomb', { 'webhooks/bomb.yaml': aliasBomb() });
    const r = await validate(dir);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trimEnd().split('\n');
    const problems = lines.filter((l) => l.startsWith(`${dir}/`));
    // 9 anchors and 8 × 9 aliases: each kind once, at its first place, with the count of the others.
    assert.deepEqual(problems, [
      `${dir}/webhooks/bomb.yaml:1:4: error yaml.anchor: anchors (&a) are not allowed (8 more in this file)`,
      `${dir}/webhooks/bomb.yaml:2:8: error yaml.alias: aliases (*a) are not allowed; write the value out (71 more in this file)`,
    ]);
    assert.ok(lines.includes('2 errors, 0 warnings.'));
  });

  test('a file of a third of a million aliases: one line for them all, no crash, exit 1', async () => {
    const row = `[${Array(300).fill('*a').join(',')}]`;
    const lines = ['a: &a [x]'];
    // The length of lines.join('\n'), kept as lines are added (joining on every turn took seconds).
    let length = lines[0].length;
    for (let i = 0; length < 1_000_000 - row.length - 20; i++) {
      lines.push(`k${i}: ${row}`);
      length += 1 + lines.at(-1)!.length;
    }
    const dir = repo('flood', { 'webhooks/flood.yaml': lines.join('\n') + '\n' });
    const aliases = (lines.length - 1) * 300;
    const r = await validate(dir);
    assert.equal(r.code, 1, r.stderr.slice(0, 500));
    assert.equal(r.stderr, '');
    assert.ok(r.stdout.includes(`flood.yaml:2:6: error yaml.alias: aliases (*a) are not allowed; write the value out (${aliases - 1} more in this file)\n`), r.stdout.slice(0, 500));
    assert.ok(r.stdout.includes('\n2 errors, 0 warnings.\n'), r.stdout.slice(-500));
  });

  test('YAML nested too deeply to read: one diagnostic that says so, exit 1', async () => {
    const dir = repo('deep', { 'webhooks/deep.yaml': `secretName: s\ndescription: ${'['.repeat(5000)}${']'.repeat(5000)}\n` });
    const r = await validate(dir);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stderr, '');
    const problems = r.stdout.split('\n').filter((l) => l.startsWith(`${dir}/`));
    assert.equal(problems.length, 1);
    assert.match(problems[0], /\/webhooks\/deep\.yaml:2:\d+: error yaml\.syntax: the YAML nests too deeply to read here; definitions need only a few levels$/);
  });
});
