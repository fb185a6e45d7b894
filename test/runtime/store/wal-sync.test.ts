import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fsync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { FakeClock } from '../../../runtime/clock.ts';
import { openStore, type Store } from '../../../runtime/store/index.ts';
import type { SqliteDB } from '../../../runtime/store/db.ts';
import type { AcceptItem, AcceptResult } from '../../../runtime/store/deliveries.ts';
import { GroupCommit } from '../../../runtime/store/group-commit.ts';
import { WalSync } from '../../../runtime/store/wal-sync.ts';

/**
 * The group commit's durability on a SQLite file (runtime/store/wal-sync.ts,
 * docs/runtime.md#durability): each batch commits without waiting for the disk, the WAL is then
 * fsynced off the event loop, and no item settles before that fsync has ended.
 */

/** Real fsyncs, recorded; `hold` keeps each one's answer back until `release` is called. */
function recordingFsync() {
  const calls: { fd: number }[] = [];
  let held: (() => void)[] | undefined;
  const fn = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    calls.push({ fd });
    fsync(fd, (err) => {
      if (held) held.push(() => cb(err));
      else cb(err);
    });
  }) as typeof fsync;
  return {
    fn,
    calls,
    hold: () => (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const go of waiting) go();
    },
  };
}

/** A store as `factory serve` opens one: its checkpoints in their thread, none in the commits. */
function openServed(t: { after(fn: () => void | Promise<void>): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'factory-wal-sync-'));
  const path = join(dir, 'factory.db');
  const store = openStore({ path, clock: new FakeClock(), checkpointThread: {} });
  t.after(async () => {
    await store.checkpointer?.stopAndWait();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, path };
}

/** A WalSync of `store`'s, made as the store makes its own, whose fsyncs are `flush`'s. */
function walSyncOf(t: { after(fn: () => void): void }, store: Store, path: string, flush: ReturnType<typeof recordingFsync>): WalSync {
  const sync = new WalSync(store.db as SqliteDB, `${path}-wal`, () => store.checkpointer?.ownsCheckpoints === true, flush.fn);
  t.after(() => sync.close());
  return sync;
}

function setup(t: { after(fn: () => void | Promise<void>): void }, flush = recordingFsync()) {
  const { store, path } = openServed(t);
  const sync = walSyncOf(t, store, path, flush);
  const batches: number[] = [];
  const commits = new GroupCommit(
    (items: readonly AcceptItem[]) => store.deliveries.acceptBatch(items, 30),
    (n) => batches.push(n),
    sync,
  );
  const item = (id = randomUUID()): AcceptItem => ({ facts: { webhookUid: 'wh_a', deliveryId: id, size: 2, receivedAt: new Date(0) }, payload: Buffer.from('{}') });
  /** What another connection sees: committed rows, whether or not they are on disk yet. */
  const seenElsewhere = () => {
    const other = new Database(path, { readonly: true });
    try {
      return (other.prepare('SELECT count(*) AS n FROM deliveries').get() as { n: number }).n;
    } finally {
      other.close();
    }
  };
  return { store, path, sync, commits, batches, item, flush, seenElsewhere };
}

const synchronous = (db: SqliteDB) => db.pragma('synchronous', { simple: true });
const FULL = 2;

test('a batch settles only once an fsync of the WAL that began after its commit has ended', async (t) => {
  const { store, path, commits, item, flush, seenElsewhere } = setup(t);
  flush.hold();
  let settled = false;
  const answer = commits.submit(item()).then((r) => {
    settled = true;
    return r;
  });
  while (flush.calls.length === 0) await turn();
  // Committed (another connection reads it), and the file being fsynced is the database's WAL...
  assert.equal(seenElsewhere(), 1);
  assert.equal(readlinkSync(`/proc/self/fd/${flush.calls[0].fd}`), `${path}-wal`);
  // ... but the request is not answered before the fsync is.
  for (let i = 0; i < 5; i++) await turn();
  assert.equal(settled, false);
  flush.release();
  assert.equal((await answer).outcome, 'accepted');
  assert.equal(flush.calls.length, 1);
  // Every other transaction of the connection still waits for the disk in its own COMMIT.
  assert.equal(synchronous(store.db as SqliteDB), FULL);
});

test('what is submitted while an fsync is in flight waits for it, then commits as one batch under the next fsync', async (t) => {
  const { commits, item, flush, batches, seenElsewhere } = setup(t);
  flush.hold();
  const first = commits.submit(item());
  while (flush.calls.length === 0) await turn();
  const later = [commits.submit(item()), commits.submit(item())];
  await turn();
  const more = commits.submit(item());
  for (let i = 0; i < 5; i++) await turn();
  // Nothing of the later ones is committed while the first batch's fsync runs.
  assert.equal(seenElsewhere(), 1);
  assert.deepEqual(batches, [1]);
  flush.release();
  await first;
  // The three queued meanwhile are one batch, with an fsync of its own.
  while (flush.calls.length < 2) await turn();
  assert.deepEqual(batches, [1, 3]);
  flush.release();
  const results = await Promise.all([...later, more]);
  assert.deepEqual(results.map((r: AcceptResult) => r.outcome), ['accepted', 'accepted', 'accepted']);
  assert.equal(flush.calls.length, 2);
});

test('a batch whose transaction throws keeps synchronous = FULL for the connection and is not fsynced', async (t) => {
  const { store, path } = openServed(t);
  const flush = recordingFsync();
  const sync = walSyncOf(t, store, path, flush);
  const commits = new GroupCommit<number, number>(
    () => {
      assert.equal(synchronous(store.db as SqliteDB), 0, 'the batch itself commits without waiting for the disk');
      throw Object.assign(new Error('disk full'), { code: 'SQLITE_FULL' });
    },
    undefined,
    sync,
  );
  await assert.rejects(commits.submit(1), { code: 'SQLITE_FULL' });
  assert.equal(synchronous(store.db as SqliteDB), FULL);
  assert.equal(flush.calls.length, 0);
});

test('an fsync that fails fails every item of its batches with the system error, and the next batch is fsynced again', async (t) => {
  let fail = true;
  const failing = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    if (!fail) return fsync(fd, cb);
    fail = false;
    fsync(fd, () => cb(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' })));
  }) as typeof fsync;
  const { commits, item } = setup(t, { ...recordingFsync(), fn: failing });
  const first = [commits.submit(item()), commits.submit(item())];
  for (const p of first) await assert.rejects(p, { code: 'EIO' });
  assert.equal((await commits.submit(item())).outcome, 'accepted');
});

test('a connection that checkpoints inside its commits commits the batch with FULL, and still answers after the fsync', async (t) => {
  // SQLite's default (no checkpoint thread, or the thread stopped or failed): such a checkpoint
  // takes its fsyncs from the commit's setting, so the batch keeps them.
  const dir = mkdtempSync(join(tmpdir(), 'factory-wal-sync-'));
  const path = join(dir, 'factory.db');
  const served = openServed(t);
  const alone = openStore({ path, clock: new FakeClock() });
  t.after(() => {
    alone.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (const [store, dbPath, stop] of [
    [alone, path, () => {}],
    [served.store, served.path, () => served.store.checkpointer?.stop()],
  ] as const) {
    const db = store.db as SqliteDB;
    const flush = recordingFsync();
    const sync = walSyncOf(t, store, dbPath, flush);
    const during: unknown[] = [];
    const commits = new GroupCommit<number, number>(
      (items) => {
        during.push(synchronous(db));
        return items.map((n) => ({ ok: true, result: n }));
      },
      undefined,
      sync,
    );
    if (store === served.store) {
      assert.equal(await commits.submit(1), 1);
      assert.deepEqual(during.splice(0), [0], 'while the thread owns the checkpoints');
    }
    stop();
    assert.notEqual(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'the commits checkpoint');
    assert.equal(await commits.submit(7), 7);
    assert.deepEqual(during, [FULL]);
    assert.ok(flush.calls.length >= 1);
  }
});
