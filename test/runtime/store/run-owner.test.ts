import { test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../../runtime/clock.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { fairNext } from '../../../runtime/store/runs.ts';
import { databaseAsOf } from '../../helpers/older-database.ts';

/** The factory a run belongs to (migration 023, docs/runtime.md#factory-limited-keys), and the queue by factory (migration 024). */

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

test('the claim finds each factory\'s oldest queued run along the queue\'s index, never by a walk of the queue', (t) => {
  const { path, db } = databaseAsOf(t, 24);
  db.close();
  const store = openStore({ path, clock: systemClock });
  t.after(() => store.close());
  for (let i = 0; i < 300; i++) {
    store.runs.create({ prompt: 'x', environmentId: 'e', source: 'API', creator: { type: 'user', name: 'u' }, factory: `f${i % 3}` });
  }
  const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${fairNext('sqlite')}`).all() as { detail: string }[]).map((r) => r.detail);
  const onRuns = plan.filter((d) => /\bruns\b|\b[hbr] /.test(d) && !/owners/.test(d));
  assert.ok(onRuns.length > 0, plan.join('\n'));
  // Every read of the runs table is a search along an index; none scans it.
  for (const step of onRuns) assert.match(step, /^SEARCH .* USING (COVERING )?INDEX /, plan.join('\n'));
  // The queue's own reads (the factories, and each one's oldest run) go along its index: a search by
  // state alone would walk every queued run.
  const queueReads = plan.filter((d) => /^SEARCH (runs|h) /.test(d));
  assert.equal(queueReads.length, 4, plan.join('\n'));
  for (const step of queueReads) assert.match(step, /USING INDEX runs_queued_by_owner( \(<expr>[>=]\?\))?$/, plan.join('\n'));
});
