import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePorcelainZ, repoDirName, repoTarget, safeFileName } from '../../../runtime/executor/workspace.ts';

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
