import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { FakeClock } from '../../../runtime/clock.ts';
import { openStore, type Store } from '../../../runtime/store/index.ts';
import type { SqliteDB } from '../../../runtime/store/db.ts';
import { Checkpointer, type CheckpointerOptions } from '../../../runtime/store/checkpointer.ts';

/** The WAL's checkpoints in a worker thread (docs/runtime.md#checkpoints), on a real SQLite file. */

function open(t: { after(fn: () => void | Promise<void>): void }, options: CheckpointerOptions) {
  const dir = mkdtempSync(join(tmpdir(), 'factory-checkpointer-'));
  const path = join(dir, 'factory.db');
  const store = openStore({ path, clock: new FakeClock(), checkpointThread: options });
  t.after(async () => {
    // The thread's own connection closes first (it can still be writing the WAL's files), as the
    // runtime closes it: removing the directory under it once failed with ENOTEMPTY.
    await store.checkpointer?.stopAndWait();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, path, db: store.db as SqliteDB };
}

const PAYLOAD = Buffer.alloc(1024, 'x');
/** Writes one group commit of `n` deliveries of 1 KB with random ids, as the ingress does. */
function writeBatch(store: Store, n: number): void {
  const items = Array.from({ length: n }, () => ({ facts: { webhookUid: 'wh_a', deliveryId: randomUUID(), size: PAYLOAD.length, receivedAt: new Date() }, payload: PAYLOAD }));
  for (const r of store.deliveries.acceptBatch(items, 30)) assert.ok(r.ok && r.result.outcome === 'accepted');
}
const walBytes = (path: string) => statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
const autocheckpoint = (db: SqliteDB) => db.pragma('wal_autocheckpoint', { simple: true });

test('under constant writes the thread copies the WAL back and the WAL stays bounded; every delivery is kept', async (t) => {
  const restartFrames = 300;
  // idleMs too: the loop below pauses (its waits for an answer), and an answer that finds nothing
  // new in the WAL would otherwise put the next checkpoint a second away, longer than the whole
  // loop takes on a fast machine (it then saw 8 checkpoints of the thread, not over 10).
  const { store, path, db } = open(t, { busyMs: 1, idleMs: 1, restartFrames });
  assert.equal(autocheckpoint(db), 0, 'the commits no longer checkpoint');
  let maxWal = 0;
  const batches = 400;
  for (let i = 0; i < batches; i++) {
    writeBatch(store, 50);
    maxWal = Math.max(maxWal, walBytes(path));
    await turn(); // the event loop turns, as between the ingress's group commits
    // Every fifth batch, wait for the thread's answer: however slow the machine, at most five
    // batches go in between two answers, so the bound below does not depend on timing.
    if (i % 5 === 4) await store.checkpointer!.idle();
  }
  const counts = store.checkpointer!.counts;
  assert.ok(counts.thread > 10, `the thread ran ${counts.thread} checkpoints`);
  assert.ok(counts.main > 0, 'the WAL was restarted');
  // Without a checkpoint these 20,000 deliveries would leave well over 20,000 frames (80 MB) in the
  // WAL. Bounded: the restart threshold plus what came in before the answer that restarts it
  // (ten batches, generously: a batch of 50 writes fewer than 120 pages).
  const frame = 4096 + 24;
  assert.ok(maxWal < (restartFrames + 10 * 120) * frame, `the WAL grew to ${maxWal} bytes`);
  assert.ok(statSync(path).size > 20_000 * PAYLOAD.length, 'the deliveries were copied into the database file');
  // The main connection copied only what was written while the thread was busy: had the thread
  // copied nothing, each restart would have copied at least the whole threshold.
  assert.ok(counts.mainFrames < counts.main * restartFrames, JSON.stringify(counts));
  assert.equal(store.deliveries.count('wh_a'), batches * 50);
});

test('writes that outrun the thread meet the hard bound: the main connection checkpoints, and the file is cut back', async (t) => {
  // The thread is never asked here (its first turn is an hour away): only the hard bound keeps the WAL in check.
  const restartFrames = 100;
  const hardFrames = 400;
  const { store, path, db } = open(t, { busyMs: 3_600_000, checkMs: 1, restartFrames, hardFrames });
  const frame = 4096 + 24;
  assert.equal(db.pragma('journal_size_limit', { simple: true }), restartFrames * frame);
  const sizes: number[] = [];
  for (let i = 0; i < 60; i++) {
    writeBatch(store, 50);
    sizes.push(walBytes(path));
    await sleep(2); // the size check runs at least once in between
  }
  const counts = store.checkpointer!.counts;
  assert.equal(counts.thread, 0);
  assert.ok(counts.forced > 0, JSON.stringify(counts));
  // 60 batches would be over 3,000 frames; the WAL stays under the hard bound plus the two batches
  // (fewer than 120 frames each) that can go in between two looks at its size.
  const most = Math.max(...sizes);
  assert.ok(most < (hardFrames + 2 * 120) * frame, `the WAL grew to ${most} bytes`);
  // After a forced checkpoint the next write cut the file back to the restart threshold's size.
  assert.ok(sizes.some((size, i) => i > 0 && size < sizes[i - 1]), `the file never shrank: ${sizes.join(' ')}`);
  assert.equal(store.deliveries.count('wh_a'), 60 * 50);
  store.checkpointer!.stop();
  assert.equal(db.pragma('journal_size_limit', { simple: true }), -1);
});

test('a reader in another connection that pins the WAL makes the hard bound give up after a second, not hold the loop for good', async (t) => {
  const restartFrames = 100;
  const hardFrames = 200;
  const { store, path, db } = open(t, { busyMs: 3_600_000, checkMs: 1, restartFrames, hardFrames });
  const busyTimeout = db.pragma('busy_timeout', { simple: true });
  // A backup's view: a read transaction in another connection, holding its snapshot.
  const reader = new Database(path, { readonly: true });
  t.after(() => reader.close());
  writeBatch(store, 50);
  reader.prepare('BEGIN').run();
  reader.prepare('SELECT count(*) FROM deliveries').get();
  for (let i = 0; i < 4; i++) {
    writeBatch(store, 50);
    await sleep(2); // each look past the bound waits up to a second for the reader, then gives up
  }
  // The WAL outgrew the hard bound, the main connection tried, and the reader kept it from restarting.
  assert.ok(walBytes(path) > hardFrames * (4096 + 24));
  assert.equal(store.checkpointer!.counts.forced, 0);
  assert.equal(db.pragma('busy_timeout', { simple: true }), busyTimeout, 'the busy timeout is given back');
  // Once the reader is done, the next look after a commit restarts the WAL, and the commit after that cuts the file back.
  reader.prepare('COMMIT').run();
  writeBatch(store, 50);
  await sleep(5);
  assert.ok(store.checkpointer!.counts.forced > 0);
  writeBatch(store, 1);
  assert.ok(walBytes(path) <= hardFrames * (4096 + 24), `the WAL file is ${walBytes(path)} bytes`);
});

test('stop gives the checkpoints back to the commits; a thread that dies does too, and says why once', async (t) => {
  const first = open(t, {});
  first.store.checkpointer!.stop();
  assert.equal(autocheckpoint(first.db), 1000);

  const reasons: string[] = [];
  const second = open(t, { busyMs: 1, onFallback: (reason) => reasons.push(reason) });
  writeBatch(second.store, 10);
  await (second.store.checkpointer as unknown as { worker: Worker }).worker.terminate();
  await turn();
  assert.equal(reasons.length, 1);
  assert.match(reasons[0], /^the checkpoint thread exited with code \d+$/);
  assert.equal(autocheckpoint(second.db), 1000);
  // Writes go on, checkpointed by the commits as SQLite does by default.
  writeBatch(second.store, 10);
  assert.equal(second.store.deliveries.count('wh_a'), 20);
});

test('a thread that cannot open the database hands the checkpoints back at once, saying why', async (t) => {
  const { db } = open(t, {});
  const reasons: string[] = [];
  let told!: () => void;
  const fellBack = new Promise<void>((resolve) => (told = resolve));
  const checkpointer = new Checkpointer(db, join(tmpdir(), 'factory-no-such-dir', 'factory.db'), {
    onFallback: (reason) => {
      reasons.push(reason);
      told();
    },
  });
  t.after(() => checkpointer.stop());
  await fellBack;
  assert.equal(reasons.length, 1);
  assert.match(reasons[0], /unable to open database file|directory does not exist/i);
  assert.equal(autocheckpoint(db), 1000);
});

test('stopAndWait ends the thread before the runtime closes, so its own close is the last and leaves no WAL behind', async (t) => {
  const { store, path } = open(t, { busyMs: 5 });
  writeBatch(store, 200);
  await store.checkpointer!.idle();
  assert.ok(existsSync(`${path}-wal`));
  await store.checkpointer!.stopAndWait();
  assert.equal(store.checkpointer!.threadEnded, true, 'the thread has ended, its connection closed');
  store.close();
  // The last connection's close checkpoints and removes the WAL and its index, at once: nothing
  // is left to change the directory after the runtime has closed (a test's clean-up, a backup).
  assert.deepEqual([existsSync(`${path}-wal`), existsSync(`${path}-shm`)], [false, false]);
  const reopened = new Database(path, { readonly: true });
  t.after(() => reopened.close());
  assert.equal((reopened.prepare('SELECT COUNT(*) AS n FROM deliveries').get() as { n: number }).n, 200);
});
