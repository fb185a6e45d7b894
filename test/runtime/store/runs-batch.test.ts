import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { FactoryError } from '../../../core/errors.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';
import { GroupCommit } from '../../../runtime/store/group-commit.ts';
import type { NewRun, NewRunItem } from '../../../runtime/store/runs.ts';

/** Run creation through the group commit (store/group-commit.ts + RunStore.createBatch), on a real SQLite file and on PostgreSQL. */

const input = (prompt: string): NewRun => ({ prompt, environmentId: 'default', source: 'API', creator: { type: 'user', name: 'ada' } });
const idem = (key: string, requestHash: string) => ({ keyId: 'key_a', key, requestHash });

function setup(_t: unknown, db: TestDatabase) {
  const store = db.open({ clock: new FakeClock() });
  const batches: number[] = [];
  const creates = new GroupCommit((items: readonly NewRunItem[]) => {
    batches.push(items.length);
    return store.runs.createBatch(items);
  });
  return { store, creates, batches };
}

forEachEngine('creations of one turn are one commit, in arrival order, with Idempotency-Keys as if one by one', async (t, db) => {
  const { store, creates, batches } = setup(t, db);
  const results = await Promise.allSettled([
    creates.submit({ input: input('a') }),
    creates.submit({ input: input('b'), idem: idem('k1', 'h1') }),
    creates.submit({ input: input('b'), idem: idem('k1', 'h1') }), // a retry in the same batch: the first run
    creates.submit({ input: input('c'), idem: idem('k1', 'other') }), // the same key, another body: 409, alone
    creates.submit({ input: input('d') }),
  ]);
  assert.deepEqual(batches, [5]);
  const [a, b, retry, clash, d] = results;
  assert.ok(a.status === 'fulfilled' && b.status === 'fulfilled' && retry.status === 'fulfilled' && d.status === 'fulfilled');
  assert.equal(a.value.created, true);
  assert.equal(b.value.created, true);
  assert.equal(retry.value.created, false);
  assert.equal(retry.value.run.run_id, b.value.run.run_id);
  assert.equal(clash.status, 'rejected');
  assert.ok(clash.reason instanceof FactoryError && clash.reason.status === 409, String(clash.reason));
  assert.equal(d.value.created, true);
  // What the promises said is what another connection reads from the database.
  const other = db.open({ clock: new FakeClock() }).db;
  const rows = other.prepare('SELECT prompt FROM runs ORDER BY seq').all() as { prompt: string }[];
  assert.deepEqual(rows.map((r) => r.prompt), ['a', 'b', 'd']);
  assert.equal((other.prepare('SELECT COUNT(*) AS n FROM run_idempotency').get() as { n: number }).n, 1);
  assert.equal(store.runs.get(b.value.run.run_id)?.prompt, 'b');
});

forEachEngine('more than MAX_BATCH creations in one turn become several commits, none lost', async (t, db) => {
  const { store, creates, batches } = setup(t, db);
  const n = GroupCommit.MAX_BATCH + 5;
  const runs = await Promise.all(Array.from({ length: n }, (_, i) => creates.submit({ input: input(`p${i}`) })));
  assert.deepEqual(batches, [GroupCommit.MAX_BATCH, 5]);
  assert.equal(new Set(runs.map((r) => r.run.run_id)).size, n);
  assert.equal(store.runs.list({ limit: 1000 }).runs.length, n);
});
