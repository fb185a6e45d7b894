import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileDurably } from '../../runtime/durable-file.ts';
import { scratch } from './executor/helpers.ts';

/** The key files' writer: whole or absent, exclusive when asked, nothing left beside them. */

test('a durable write puts the whole file in place with its mode, and leaves no temporary file', (t) => {
  const dir = scratch(t);
  const file = path.join(dir, 'admin.key');
  writeFileDurably(file, 'one\n', { mode: 0o600 });
  assert.equal(readFileSync(file, 'utf8'), 'one\n');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  // Not exclusive: replaces.
  writeFileDurably(file, 'two\n', { mode: 0o600 });
  assert.equal(readFileSync(file, 'utf8'), 'two\n');
  assert.deepEqual(readdirSync(dir), ['admin.key']);
});

test('an exclusive durable write fails with EEXIST when the file exists, keeping it as it was', (t) => {
  const dir = scratch(t);
  const file = path.join(dir, 'master.key');
  writeFileDurably(file, 'first\n', { mode: 0o600, exclusive: true });
  assert.throws(() => writeFileDurably(file, 'second\n', { mode: 0o600, exclusive: true }), { code: 'EEXIST' });
  assert.equal(readFileSync(file, 'utf8'), 'first\n');
  assert.deepEqual(readdirSync(dir), ['master.key']);
});

/** Why strace cannot be used here, or undefined. In CI a missing strace is a failure, not a skip. */
function straceMissing(): string | false {
  const r = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  if (!r.error && r.status === 0) return false;
  if (process.env.CI === 'true') throw new Error('CI=true and strace is not installed (apt-get install strace)');
  return 'strace is not installed (apt-get install strace)';
}

test('the file and its directory are fsynced before the write returns (seen by strace)', { skip: straceMissing() }, (t) => {
  const dir = scratch(t);
  const trace = path.join(dir, 'trace');
  const script = `import { writeFileDurably } from ${JSON.stringify(path.resolve(import.meta.dirname, '../../runtime/durable-file.ts'))};
writeFileDurably(${JSON.stringify(path.join(dir, 'master.key'))}, 'k\\n', { mode: 0o600, exclusive: true });`;
  const r = spawnSync('strace', ['-f', '-e', 'trace=openat,fsync,fdatasync,link,rename', '-o', trace, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  const lines = readFileSync(trace, 'utf8').split('\n');
  // The temporary file's descriptor is fsynced before the link; then the directory's.
  const tmpOpen = lines.findIndex((l) => /openat\(.*\/\.[0-9a-f]{12}\.tmp", O_WRONLY\|O_CREAT\|O_EXCL/.test(l));
  assert.ok(tmpOpen >= 0, 'the temporary file was opened');
  const tmpFd = /= (\d+)$/.exec(lines[tmpOpen])![1];
  const fsyncTmp = lines.findIndex((l, i) => i > tmpOpen && new RegExp(`fsync\\(${tmpFd}\\)`).test(l));
  const link = lines.findIndex((l) => /link\(.*master\.key"/.test(l));
  assert.ok(fsyncTmp >= 0 && link > fsyncTmp, 'fsync of the file, then the link');
  const dirOpen = lines.findIndex((l, i) => i > link && l.includes(`openat(AT_FDCWD, ${JSON.stringify(dir)}, O_RDONLY`));
  assert.ok(dirOpen > link, 'the directory opened after the link');
  const dirFd = /= (\d+)$/.exec(lines[dirOpen])![1];
  assert.ok(lines.some((l, i) => i > dirOpen && new RegExp(`fsync\\(${dirFd}\\)`).test(l)), 'the directory fsynced');
});
