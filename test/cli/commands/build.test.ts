import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli } from '../../../cli/main.ts';
import { validateSnapshot } from '../../../core/schemas.ts';
import { bufferIO } from '../helpers.ts';

const ROOT = resolve(import.meta.dirname, '../../..');

test('build writes identical canonical bytes twice; a changed prompt changes the digest', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'factory-build-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const repo = join(dir, 'repo');
  await cp(join(ROOT, 'examples/factory'), repo, { recursive: true });
  for (const out of ['a.json', 'b.json']) {
    const io = bufferIO();
    assert.equal(await runCli(['build', repo, '-o', join(dir, out)], io), 0);
    assert.match(io.err, /^wrote .* \(sha256:[0-9a-f]{64}\)\n$/);
  }
  const a = await readFile(join(dir, 'a.json'), 'utf8');
  assert.equal(a, await readFile(join(dir, 'b.json'), 'utf8'));
  const snapshot = JSON.parse(a);
  assert.ok(validateSnapshot(snapshot).ok);
  assert.equal(a, JSON.stringify(snapshot) === a.trimEnd() ? a : '', 'no whitespace but the final newline');

  const stdout = bufferIO();
  assert.equal(await runCli(['build', repo], stdout), 0);
  assert.equal(stdout.out, a);

  await appendFile(join(repo, 'automations/alerts.md'), '\nAlso page the on-call engineer.\n');
  const changed = bufferIO();
  assert.equal(await runCli(['build', repo], changed), 0);
  assert.notEqual(JSON.parse(changed.out).digest, snapshot.digest);
});

test('build of a broken tree prints diagnostics to stderr, writes nothing and exits 1', async () => {
  const io = bufferIO();
  assert.equal(await runCli(['build', 'test/fixtures/broken'], io), 1);
  assert.equal(io.out, '');
  assert.match(io.err, /test\/fixtures\/broken\/factory\.yaml:2:1: error factory\.unknown_key/);
});

test('every command has --help with an example', async () => {
  for (const command of ['validate', 'build']) {
    const io = bufferIO();
    assert.equal(await runCli([command, '--help'], io), 0);
    assert.match(io.out, /Examples:\n  \$ factory /);
  }
});
