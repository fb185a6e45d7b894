import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { CANCEL_GRACE_MS, LEASE_LOST, OVERDUE_MESSAGE, REPORTED_BYTES_CAP } from '../../../runtime/store/leases.ts';
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

forEachEngine('a cancel stands: the holder finishes CANCELLED whatever it reports, and past the grace its renewals stop and the sweep ends it CANCELLED', (_t, db) => {
  const { store, clock } = setup(db);
  const obeyed = store.runs.create(input);
  clock.advance(1);
  const ignored = store.runs.create(input);
  store.leases.claim(A, LEASE_MS);
  store.leases.claim(B, LEASE_MS);
  assert.equal(store.leases.requestCancel(obeyed.run_id), true);
  assert.equal(store.leases.requestCancel(ignored.run_id), true);

  // A holder that reports SUCCEEDED after the cancel: the run still ends CANCELLED.
  const ended = store.leases.finish(obeyed.run_id, A, 'SUCCEEDED', { statusMessage: 'done' });
  assert.notEqual(ended, LEASE_LOST);
  const run = store.runs.get(obeyed.run_id)!;
  assert.deepEqual([run.state, run.error_code, run.status_message], ['CANCELLED', 'cancelled', 'the run was cancelled']);

  // A holder that ignores the cancel and keeps renewing: within the grace it may, then not. The
  // cancel asked again meanwhile does not restart the grace.
  for (let t = 0; t < CANCEL_GRACE_MS; t += LEASE_MS / 3) {
    assert.deepEqual(store.leases.renew(ignored.run_id, B, LEASE_MS), { cancel: true });
    clock.advance(LEASE_MS / 3);
    assert.equal(store.leases.requestCancel(ignored.run_id), true);
  }
  clock.advance(1);
  assert.equal(store.leases.renew(ignored.run_id, B, LEASE_MS), LEASE_LOST);
  assert.deepEqual(store.leases.renewAll(B, LEASE_MS), []);
  assert.equal(store.leases.appendEvents(ignored.run_id, B, LEASE_MS, [{ type: 'output', data: { text: 'x' } }]), LEASE_LOST);
  assert.equal(store.leases.finish(ignored.run_id, B, 'SUCCEEDED', {}), LEASE_LOST);
  clock.advance(LEASE_MS);
  assert.deepEqual(store.leases.sweep(), [ignored.run_id]);
  const swept = store.runs.get(ignored.run_id)!;
  assert.deepEqual([swept.state, swept.error_code], ['CANCELLED', 'cancelled']);
});

forEachEngine('a batch sent again with the same first_index is stored once; a holder\'s transcript is capped with one marker', (_t, db) => {
  const { store } = setup(db);
  const run = store.runs.create(input);
  store.leases.claim(A, LEASE_MS);
  const texts = () => store.runs.events(run.run_id, 0, 100_000).filter((e) => e.type === 'output').map((e) => String(e.data.text));
  const out = (text: string) => ({ type: 'output', data: { stream: 'stdout', text } });
  store.leases.appendEvents(run.run_id, A, LEASE_MS, [out('one'), out('two')], 0);
  // Its answer was lost: the same batch again, then one that overlaps it and goes on.
  store.leases.appendEvents(run.run_id, A, LEASE_MS, [out('one'), out('two')], 0);
  store.leases.appendEvents(run.run_id, A, LEASE_MS, [out('two'), out('three')], 1);
  assert.deepEqual(texts(), ['one', 'two', 'three']);

  // Past the cap: one marker, then nothing more, however much is sent.
  const big = 'x'.repeat(400_000);
  for (let i = 0; i < Math.ceil(REPORTED_BYTES_CAP / 400_000) + 5; i++) store.leases.appendEvents(run.run_id, A, LEASE_MS, [out(big)], 3 + i);
  const all = texts();
  const markers = all.filter((t) => t.startsWith('[transcript truncated'));
  assert.equal(markers.length, 1);
  assert.equal(all.at(-1), markers[0]);
  const stored = all.filter((t) => t === big).length;
  assert.ok(stored * 400_000 <= REPORTED_BYTES_CAP && (stored + 1) * 400_000 > REPORTED_BYTES_CAP - 1000, String(stored));
});

forEachEngine('a holder held to a deadline: renewals stop past it, and the sweep ends the run as overdue, not as lost', (_t, db) => {
  const { store, clock } = setup(db);
  const run = store.runs.create(input);
  store.leases.claim(A, LEASE_MS);
  const limit = 5 * 60_000;
  store.leases.setDeadline(run.run_id, A, limit);
  store.leases.setDeadline(run.run_id, B, 1); // another holder cannot set it
  for (let t = 0; t + LEASE_MS / 3 <= limit; t += LEASE_MS / 3) {
    assert.deepEqual(store.leases.renew(run.run_id, A, LEASE_MS), { cancel: false }, `at ${t} ms`);
    clock.advance(LEASE_MS / 3);
  }
  clock.advance(LEASE_MS / 3);
  assert.equal(store.leases.renew(run.run_id, A, LEASE_MS), LEASE_LOST);
  assert.equal(store.leases.appendEvents(run.run_id, A, LEASE_MS, [{ type: 'output', data: { text: 'late' } }]), LEASE_LOST);
  clock.advance(LEASE_MS);
  assert.deepEqual(store.leases.sweep(), [run.run_id]);
  const ended = store.runs.get(run.run_id)!;
  assert.deepEqual([ended.state, ended.error_code, ended.status_message], ['ERROR', 'worker_lost', OVERDUE_MESSAGE]);
});
