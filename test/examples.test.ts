import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { compileDir, loadRepo } from '../cli/compiler/index.ts';
import { validateSnapshot } from '../core/schemas.ts';

const EXAMPLE = resolve(import.meta.dirname, '../examples/factory');

test('examples/factory validates clean and its snapshot matches the snapshot schema', async () => {
  const { snapshot, diagnostics } = await compileDir(EXAMPLE);
  assert.deepEqual(diagnostics, []);
  assert.ok(snapshot);
  assert.ok(validateSnapshot(snapshot).ok);
  assert.deepEqual(snapshot.webhooks.map((w) => [w.name, w.authMode]), [['alerts', 'url_token'], ['ci', 'token'], ['github', 'signature']]);
  assert.deepEqual(snapshot.automations.map((a) => a.name), ['alerts', 'ci-failure', 'review-pull-request', 'triage-issue']);
  // `url: ../..` is this project's own repo.
  assert.equal(snapshot.environments[0].repos[0].url, resolve(EXAMPLE, '../..'));
});

test('every YAML file of the example starts with a modeline naming an existing schema', async () => {
  for (const f of await loadRepo(EXAMPLE)) {
    if (!f.path.endsWith('.yaml')) continue;
    const m = /^# yaml-language-server: \$schema=(\S+)\n/.exec(f.text);
    assert.ok(m, `${f.path} has no modeline`);
    assert.ok(existsSync(join(EXAMPLE, dirname(f.path), m[1])), `${f.path}: ${m[1]} does not exist`);
  }
});
