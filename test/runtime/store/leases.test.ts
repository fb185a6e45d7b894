import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { LEASE_LOST } from '../../../runtime/store/leases.ts';
import type { NewRun } from '../../../runtime/store/runs.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';

/** Leases on runs in progress (docs/runs.md#workers), on both engines. */

const LEASE_MS = 30_000;
const input: NewRun = { prompt: 'Do it', environmentId: 'default', source: 'API', creator: { type: 'user', name: 'ada' } };
const A = { id: 'holder-a', name: 'host-a/1' };
const B = { id: 'holder-b', name: 'host-b/2' };

function setup(db: TestDatabase) {
  const clock = new FakeClock();
  const store = db.open({ clock });
  return { clock, store };
}

forEachEngine('a claim takes the run with its lease; only the holder renews, writes events and finishes', (_t, db) => {
  const { store } = setup(db);
  const run = store.runs.create(input);
  const claimed = store.leases.claim(A, LEASE_MS);
  assert.equal(claimed?.run_id, run.run_id);
  assert.equal(claimed?.state, 'INPROGRESS');
  assert.equal(store.leases.claim(B, LEASE_MS), undefined, 'nothing else is queued');
  assert.deepEqual(store.leases.holderOf(run.run_id)?.name, 'host-a/1');

  assert.deepEqual(store.leases.renew(run.run_id, A, LEASE_MS), { cancel: false });
  assert.equal(store.leases.renew(run.run_id, B, LEASE_MS), LEASE_LOST);
  assert.equal(store.leases.appendEvents(run.run_id, B, LEASE_MS, [{ type: 'output', data: { text: 'b' } }]), LEASE_LOST);
  assert.deepEqual(store.leases.appendEvents(run.run_id, A, LEASE_MS, [{ type: 'output', data: { text: 'a1' } }, { type: 'output', data: { text: 'a2' } }]), { cancel: false });
  assert.deepEqual(store.runs.events(run.run_id, 0, 10).map((e) => e.data.text ?? e.type), ['state', 'a1', 'a2']);
  assert.deepEqual(store.leases.renewAll(A, LEASE_MS), [{ runId: run.run_id, cancel: false }]);
  assert.deepEqual(store.leases.renewAll(B, LEASE_MS), []);

  assert.equal(store.leases.finish(run.run_id, B, 'SUCCEEDED', {}), LEASE_LOST);
  const ended = store.leases.finish(run.run_id, A, 'SUCCEEDED', {});
  assert.notEqual(ended, LEASE_LOST);
  assert.equal(store.runs.get(run.run_id)?.state, 'SUCCEEDED');
  assert.equal(store.leases.renew(run.run_id, A, LEASE_MS), LEASE_LOST, 'a finished run has no lease');
  assert.equal(store.leases.finish(run.run_id, A, 'FAILED', {}), LEASE_LOST);
});

forEachEngine('an expired lease is lost before any sweep; the sweep ends the run ERROR worker_lost once', (_t, db) => {
  const { store, clock } = setup(db);
  const lost = store.runs.create(input);
  clock.advance(1);
  const kept = store.runs.create(input);
  store.leases.claim(A, LEASE_MS);
  store.leases.claim(B, LEASE_MS);
  clock.advance(LEASE_MS - 1_000);
  assert.equal(store.leases.renewAll(B, LEASE_MS).length, 1);
  clock.advance(2_000);
  assert.equal(store.leases.renew(lost.run_id, A, LEASE_MS), LEASE_LOST);
  assert.deepEqual(store.leases.expiredInProgressIds(), [lost.run_id]);
  assert.deepEqual(store.leases.sweep(), [lost.run_id]);
  assert.deepEqual(store.leases.sweep(), []);
  const run = store.runs.get(lost.run_id)!;
  assert.equal(run.state, 'ERROR');
  assert.equal(run.error_code, 'worker_lost');
  assert.equal(run.retryable, true);
  assert.equal(store.runs.get(kept.run_id)?.state, 'INPROGRESS');
  assert.deepEqual(store.leases.expiredInProgressIds(), []);
});

forEachEngine('a cancel is asked of a live holder only, and the holder sees it', (_t, db) => {
  const { store, clock } = setup(db);
  const run = store.runs.create(input);
  store.leases.claim(A, LEASE_MS);
  assert.equal(store.leases.requestCancel(run.run_id), true);
  assert.deepEqual(store.leases.renew(run.run_id, A, LEASE_MS), { cancel: true });
  assert.deepEqual(store.leases.renewAll(A, LEASE_MS), [{ runId: run.run_id, cancel: true }]);
  clock.advance(LEASE_MS + 1);
  assert.equal(store.leases.requestCancel(run.run_id), false, 'no live holder: the caller ends the run itself');
  const queued = store.runs.create(input);
  assert.equal(store.leases.requestCancel(queued.run_id), false, 'a QUEUED run has no holder');
});
