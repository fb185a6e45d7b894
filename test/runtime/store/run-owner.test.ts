import { test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../../runtime/clock.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { databaseAsOf } from '../../helpers/older-database.ts';

/** The factory a run belongs to (migration 023, docs/runtime.md#factory-limited-keys). */

const AT = '2026-11-01T00:00:00.000Z';

test('an upgrade gives each run its factory: the automation\'s, else its environment\'s; NULL when no factory defines it', (t) => {
  // The database as release 022 left it: runs without an owner column.
  const { path, db: old } = databaseAsOf(t, 22);
  old.prepare(`INSERT INTO factories (name, managed_by, created_at) VALUES ('a', 'definitions', ?), ('b', 'definitions', ?)`).run(AT, AT);
  old.prepare(`INSERT INTO environments (name, factory, spec, created_at, updated_at) VALUES ('env-b', 'b', '{}', ?, ?)`).run(AT, AT);
  const run = old.prepare(
    `INSERT INTO runs (run_id, state, prompt, environment_id, source, creator_type, creator_name, factory, automation, created_at, updated_at)
     VALUES (?, 'QUEUED', 'p', ?, ?, ?, 'x', ?, ?, ?, ?)`,
  );
  run.run('run_automation', 'env-b', 'WEBHOOK', 'automation', 'a', 'review', AT, AT);
  run.run('run_api', 'env-b', 'API', 'user', null, null, AT, AT);
  run.run('run_gone', 'env-gone', 'API', 'user', null, null, AT, AT);
  old.close();

  const store = openStore({ path, clock: systemClock });
  t.after(() => store.close());
  assert.equal(store.runs.ownerOf('run_automation'), 'a');
  assert.equal(store.runs.ownerOf('run_api'), 'b');
  assert.equal(store.runs.ownerOf('run_gone'), null);
  assert.equal(store.runs.ownerOf('run_nosuch'), undefined);
  // Listing by owner uses the recorded value.
  assert.deepEqual(store.runs.list({ limit: 10, owners: ['b'] }).runs.map((r) => r.run_id), ['run_api']);
  assert.deepEqual(store.runs.list({ limit: 10, owners: [] }).runs, []);
});
