import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { createIngressState } from '../../../runtime/ingress/state.ts';
import { openStore } from '../../../runtime/store/index.ts';

/** The ingress's state: its secret cache hears of secrets created and deleted (docs/runtime.md). */
test('one runtime on SQLite: a secret deleted and re-created is not answered from its own cache', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-secret-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new FakeClock();
  const store = openStore({ path: join(dir, 'factory.db'), clock, masterKey: randomBytes(32) });
  t.after(() => store.close());
  const ingress = createIngressState(parseConfig({}, {}, '/tmp'), store, clock);
  store.secrets.create('tok', 'first');
  assert.equal(ingress.secrets.get('tok', 1), 'first');
  store.secrets.delete('tok');
  store.secrets.create('tok', 'second');
  // The same name and version, another value, and no time passed: the cache must have been told.
  assert.equal(ingress.secrets.get('tok', 1), 'second');
});
