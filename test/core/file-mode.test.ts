import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tightenMode } from '../../core/file-mode.ts';

test('tightenMode narrows a looser mode and says what it was; a tight or missing path is left alone', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-mode-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'key');
  writeFileSync(file, 'k');
  chmodSync(file, 0o644);
  assert.equal(tightenMode(file, 0o600), 0o644);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(tightenMode(file, 0o600), undefined);
  chmodSync(file, 0o400);
  assert.equal(tightenMode(file, 0o600), undefined, 'tighter than asked stays as it is');
  assert.equal(statSync(file).mode & 0o777, 0o400);
  assert.equal(tightenMode(join(dir, 'missing'), 0o600), undefined);
});
