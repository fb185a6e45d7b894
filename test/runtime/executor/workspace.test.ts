import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parsePorcelainZ, repoDirName, repoTarget, safeFileName, writeInputs } from '../../../runtime/executor/workspace.ts';

test('repo directory names come from the URL basename', () => {
  assert.equal(repoDirName('https://github.com/acme/app.git'), 'app');
  assert.equal(repoDirName('git@github.com:acme/tools.git'), 'tools');
  assert.equal(repoDirName('file:///srv/repos/site/'), 'site');
  assert.equal(repoDirName('/srv/repos/lib'), 'lib');
});

test('repo paths stay inside the workspace', () => {
  assert.equal(repoTarget('/ws', { url: 'x', path: 'a/b' }), '/ws/a/b');
  assert.throws(() => repoTarget('/ws', { url: 'x', path: '../b' }));
  assert.throws(() => repoTarget('/ws', { url: 'x', path: '/etc' }));
  assert.throws(() => repoTarget('/ws', { url: 'x', path: '.' }));
});

test('git status -z entries become file changes', () => {
  const out = ' M src/a.txt\0?? new file.txt\0 D gone.txt\0R  renamed.txt\0old.txt\0A  staged.txt\0';
  assert.deepEqual(parsePorcelainZ(out), [
    { path: 'src/a.txt', kind: 'modified', untracked: false },
    { path: 'new file.txt', kind: 'added', untracked: true },
    { path: 'gone.txt', kind: 'deleted', untracked: false },
    { path: 'renamed.txt', kind: 'renamed', oldPath: 'old.txt', untracked: false },
    { path: 'staged.txt', kind: 'added', untracked: false },
  ]);
});

test('attachment names are plain file names', () => {
  assert.equal(safeFileName('event-payload.json'), true);
  for (const bad of ['', '.', '..', 'a/b', '..\\x', 'a\0b']) assert.equal(safeFileName(bad), false, bad);
});

test('inputs are written without following a symlink, and handed to the run user through the open file', { skip: process.getuid?.() !== 0 ? 'needs root to give files to another user' : false }, async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-inputs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ws = path.join(dir, 'ws');
  const keep = path.join(dir, 'data');
  mkdirSync(ws);
  mkdirSync(keep);
  writeFileSync(path.join(keep, 'admin.key'), 'fk_secret\n');
  const written = await writeInputs(ws, 'do it\n', [{ name: 'event-payload.json', bytes: Buffer.from('{}') }], { uid: 65534, gid: 65534 });
  for (const f of written) {
    const st = lstatSync(f);
    assert.ok(st.isFile());
    assert.deepEqual([st.uid, st.gid], [65534, 65534], f);
  }
  // A symlink where an input goes (left by a repo step) is an error; what it points at stays root's.
  symlinkSync(path.join(keep, 'admin.key'), path.join(ws, 'image-1.png'));
  await assert.rejects(writeInputs(ws, 'x', [{ name: 'image-1.png', bytes: Buffer.from('png') }], { uid: 65534, gid: 65534 }), {
    message: "the workspace already holds image-1.png (a repo's path?), where the runtime writes the run's attachment; give the repo another path",
  });
  assert.equal(statSync(path.join(keep, 'admin.key')).uid, 0);
  assert.equal(readFileSync(path.join(keep, 'admin.key'), 'utf8'), 'fk_secret\n');
  // A repo cloned to `path: prompt.md`: the definition's mistake, said as such (the run ends repo_failed).
  const ws2 = path.join(dir, 'ws2');
  mkdirSync(path.join(ws2, 'prompt.md'), { recursive: true });
  await assert.rejects(writeInputs(ws2, 'x', []), { message: "the workspace already holds prompt.md (a repo's path?), where the runtime writes the run's prompt; give the repo another path" });
});

test('a FIFO where an input goes (left by a repo\'s checkout hook) is refused at once, never waited on', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-ws-fifo-'));
  try {
    execFileSync('mkfifo', [path.join(dir, 'prompt.md')]);
    // Without O_NONBLOCK this open would wait for a reader forever, and the test would never end.
    await assert.rejects(writeInputs(dir, 'x', []), { message: "the workspace already holds prompt.md (a repo's path?), where the runtime writes the run's prompt; give the repo another path" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
