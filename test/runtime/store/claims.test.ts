import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import { ClaimIndex, memoryClaims, type Claims } from '../../../runtime/store/claims.ts';
import { openDatabase, type SqliteDB } from '../../../runtime/store/db.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { databaseAsOf } from '../../helpers/older-database.ts';

/** SQLite's claims in arrival order, found through an index in memory (docs/ingress.md#the-claim-in-arrival-order). */

const DAY = 86_400_000;

function database(t: { after: (fn: () => void) => void }): { path: string; db: SqliteDB } {
  const dir = mkdtempSync(join(tmpdir(), 'factory-claims-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'factory.db');
  const db = openDatabase(path);
  t.after(() => db.close());
  return { path, db };
}

const rows = (db: SqliteDB) => db.prepare('SELECT webhook_uid, identity, accepted_ms, seq FROM delivery_claims ORDER BY id').raw().all();

// Every mask below makes identities share hashes: 0 puts them all on one, 3 on four.
for (const mask of [0, 3]) {
  test(`claims with shared hashes (mask ${mask}) are told apart by their identity`, (t) => {
    const { db } = database(t);
    const claims = memoryClaims(db, mask);
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    ids.forEach((id, i) => assert.equal(claims.claim('wh_a', id, 1000, i + 1, 0), true, id));
    // A live claim holds: each again is a Duplicate.
    for (const id of ids) assert.equal(claims.claim('wh_a', id, 2000, 99, 0), false, id);
    // Per webhook: the same id on another webhook is its own claim.
    assert.equal(claims.claim('wh_b', 'a', 2000, 50, 0), true);
    assert.deepEqual(ids.map((id) => claims.entryOf('wh_a', id)), [1, 2, 3, 4, 5, 6]);
    assert.equal(claims.entryOf('wh_b', 'a'), 50);
    assert.equal(claims.entryOf('wh_a', 'z'), undefined);
    // Older than the cutoff: taken over in place, pointing at the new entry.
    assert.equal(claims.claim('wh_a', 'c', 5000, 70, 1500), true);
    assert.equal(claims.entryOf('wh_a', 'c'), 70);
    assert.equal(rows(db).length, 7);
  });
}

test('a claim rolled back with its transaction leaves the identity free, even when another claim reuses its row id', (t) => {
  const { db } = database(t);
  const claims = memoryClaims(db, 0);
  const rolledBack = db.transaction(() => {
    assert.equal(claims.claim('wh_a', 'lost', 1000, 1, 0), true);
    throw new Error('rolled back');
  });
  assert.throws(() => rolledBack(), /rolled back/);
  assert.deepEqual(rows(db), []);
  assert.equal(claims.entryOf('wh_a', 'lost'), undefined);
  // The next claim gets the same row id; the index's leftover for 'lost' points at it.
  assert.equal(claims.claim('wh_a', 'other', 1000, 2, 0), true);
  assert.equal(claims.entryOf('wh_a', 'lost'), undefined);
  assert.equal(claims.claim('wh_a', 'lost', 1000, 3, 0), true);
  assert.equal(claims.claim('wh_a', 'lost', 1000, 4, 0), false);
  assert.equal(claims.claim('wh_a', 'other', 1000, 5, 0), false);
  assert.deepEqual([claims.entryOf('wh_a', 'other'), claims.entryOf('wh_a', 'lost')], [2, 3]);
});

function pruneIn(db: SqliteDB, claims: Claims, cutoffMs: number, fail: boolean): number {
  let n = 0;
  try {
    db.transaction(() => {
      n = claims.prune(cutoffMs, 100);
      if (fail) throw new Error('rolled back');
    }).immediate();
  } catch {
    claims.committed(false);
    return n;
  }
  claims.committed(true);
  return n;
}

test('a prune rolled back keeps its claims in the index; a committed one forgets them', (t) => {
  const { db } = database(t);
  const claims = memoryClaims(db, 3);
  // No entry in the log holds these claims, so they go once older than the cutoff.
  for (const id of ['old-1', 'old-2', 'young']) claims.claim('wh_a', id, id === 'young' ? 10 * DAY : DAY, 0, 0);
  assert.equal(pruneIn(db, claims, 5 * DAY, true), 2);
  assert.equal(claims.claim('wh_a', 'old-1', 6 * DAY, 0, 0), false, 'the rolled-back prune left old-1 claimed');
  assert.equal(pruneIn(db, claims, 5 * DAY, false), 2);
  assert.deepEqual(rows(db), [['wh_a', 'young', 10 * DAY, 0]]);
  assert.equal(claims.claim('wh_a', 'old-1', 6 * DAY, 0, 0), true);
  assert.equal(claims.claim('wh_a', 'young', 6 * DAY, 0, 0), false);
});

test('the index is built again from the table at each open; rows without a hash get theirs once', (t) => {
  const { path, db } = database(t);
  const first = memoryClaims(db);
  for (let i = 0; i < 500; i++) first.claim('wh_a', `id-${i}`, 1000, i + 1, 0);
  // As migration 020 leaves the identities it copied: no hash yet.
  db.prepare('UPDATE delivery_claims SET hash = NULL WHERE id % 2 = 0').run();
  db.close();

  const again = openDatabase(path);
  t.after(() => again.close());
  const claims = memoryClaims(again);
  // Read in steps: first the claims that have a hash, then the others get theirs, each in a step.
  assert.deepEqual(claims.loading(), { loaded: 0 });
  const unhashed = () => again.prepare('SELECT COUNT(*) FROM delivery_claims WHERE hash IS NULL').pluck().get();
  assert.equal(claims.loadStep(), false);
  assert.deepEqual([claims.loading(), unhashed()], [{ loaded: 250 }, 250]);
  assert.equal(claims.loadStep(), false);
  assert.deepEqual([claims.loading(), unhashed()], [{ loaded: 500 }, 0]);
  assert.equal(claims.loadStep(), true);
  assert.equal(claims.loading(), undefined);
  for (let i = 0; i < 500; i++) assert.equal(claims.claim('wh_a', `id-${i}`, 2000, 0, 0), false, `id-${i}`);
  assert.equal(claims.entryOf('wh_a', 'id-321'), 322);
  assert.equal(claims.claim('wh_a', 'id-500', 2000, 0, 0), true);
});

test('an upgrade from migration 021 hashes every claim again and still finds each one', (t) => {
  const { path, db: old } = databaseAsOf(t, 21);
  // Claims as release 021 stored them: a SHA-1 of the key's hex, the UID and the identity.
  const key = (old.prepare('SELECT key FROM delivery_claim_key').pluck().get() as Buffer).toString('hex');
  const insert = old.prepare('INSERT INTO delivery_claims (webhook_uid, identity, accepted_ms, seq, hash) VALUES (?, ?, ?, ?, ?)');
  for (let i = 0; i < 300; i++) insert.run('wh_a', `id-${i}`, 1000, i + 1, createHash('sha1').update(`${key}wh_a\nid-${i}`).digest().readUInt32LE(0) & 0x3fffffff);
  old.close();

  const db = openDatabase(path);
  t.after(() => db.close());
  assert.equal(db.prepare('SELECT COUNT(*) FROM delivery_claims WHERE hash IS NULL').pluck().get(), 300);
  const claims = memoryClaims(db);
  for (let i = 0; i < 300; i++) assert.equal(claims.claim('wh_a', `id-${i}`, 2000, 0, 0), false, `id-${i}`);
  assert.equal(claims.entryOf('wh_a', 'id-123'), 124);
  assert.equal(db.prepare('SELECT COUNT(*) FROM delivery_claims WHERE hash IS NULL').pluck().get(), 0);
  // A fresh claim's stored hash is the new one: the same as the rows given theirs at load.
  assert.equal(claims.claim('wh_a', 'id-300', 2000, 301, 0), true);
  const identities = db.prepare('SELECT identity FROM delivery_claims').pluck().all() as string[];
  const again = openDatabase(path);
  t.after(() => again.close());
  const reread = memoryClaims(again);
  for (const identity of identities) assert.equal(reread.claim('wh_a', identity, 3000, 0, 0), false, identity);
});

test('the hash is keyed by the database: two databases hash one identity apart', (t) => {
  const keys = [database(t).db, database(t).db].map((db) => db.prepare('SELECT key FROM delivery_claim_key').pluck().get() as Buffer);
  assert.equal(keys[0].length, 16);
  assert.notDeepEqual(keys[0], keys[1]);
  // The stored hashes of one identity differ with the key.
  const hashes = [database(t).db, database(t).db].map((db) => {
    memoryClaims(db).claim('wh_a', 'same', 1000, 1, 0);
    return db.prepare('SELECT hash FROM delivery_claims').pluck().get();
  });
  assert.notEqual(hashes[0], hashes[1]);
});

test('a store reopened on its file still sees each accepted identity as a Duplicate', (t) => {
  const { path, db } = database(t);
  db.close();
  const write = (store: ReturnType<typeof openStore>, id: string) =>
    store.deliveries.writeBatch(
      [{ kind: 'accept', facts: { webhookUid: 'wh_a', deliveryId: id, size: 2, receivedAt: new Date(1000) }, payload: Buffer.from('{}') }],
      { identityDays: 30, rejectedKeep: 100 },
    )[0];
  const masterKey = randomBytes(32);
  const store = openStore({ path, clock: new FakeClock(), masterKey });
  for (const id of ['x', 'y']) {
    const r = write(store, id);
    assert.equal(r.ok && r.result.outcome, 'accepted', id);
  }
  store.close();
  const reopened = openStore({ path, clock: new FakeClock(), masterKey });
  t.after(() => reopened.close());
  for (const id of ['x', 'y']) {
    const r = write(reopened, id);
    assert.equal(r.ok && r.result.outcome, 'duplicate', id);
  }
  assert.equal(reopened.deliveries.get('wh_a', 'x')!.outcome, 'accepted');
});

test('the index in memory agrees with a plain map through growth, removals and tombstones', () => {
  const index = new ClaimIndex();
  const model = new Map<number, Set<number>>();
  // A small hash range, so hashes share slots and runs of slots; ids that pass 2^32.
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const ids = (h: number) => {
    const found: number[] = [];
    for (let s = index.first(h); s >= 0; s = index.next(h, s)) found.push(index.idAt(s));
    return found.sort((a, b) => a - b);
  };
  for (let step = 0; step < 60_000; step++) {
    const h = rand(5000);
    const id = 2 ** 32 + rand(20_000);
    if (rand(3) === 0) {
      index.remove(h, id);
      model.get(h)?.delete(id);
    } else {
      index.add(h, id);
      if (!model.has(h)) model.set(h, new Set());
      model.get(h)!.add(id);
    }
  }
  let live = 0;
  for (let h = 0; h < 5000; h++) {
    const want = [...(model.get(h) ?? [])].sort((a, b) => a - b);
    live += want.length;
    assert.deepEqual(ids(h), want, `hash ${h}`);
  }
  assert.equal(index.size, live);
  assert.ok(live > 4 * 1024, `the table grew well past its first 1,024 slots (${live} claims)`);
});

/** 25,000 claims written, the database opened again and its first step of 10,000 read. */
function reopenedOneStepIn(t: { after: (fn: () => void) => void }, acceptedMs: (i: number) => number): { claims: Claims; db: SqliteDB } {
  const { path, db } = database(t);
  const first = memoryClaims(db);
  db.transaction(() => {
    for (let i = 0; i < 25_000; i++) first.claim('wh_a', `id-${i}`, acceptedMs(i), i + 1, 0);
  }).immediate();
  db.close();
  const again = openDatabase(path);
  t.after(() => again.close());
  const claims = memoryClaims(again);
  assert.equal(claims.loadStep(), false);
  assert.deepEqual(claims.loading(), { loaded: 10_000 });
  return { claims, db: again };
}

test('a claim before the reading at open is done reads the rest first', (t) => {
  const { claims } = reopenedOneStepIn(t, () => 1000);
  // id-24999 is in the part not read yet: still a Duplicate.
  assert.equal(claims.claim('wh_a', 'id-24999', 2000, 0, 0), false);
  assert.equal(claims.loading(), undefined);
  assert.equal(claims.claim('wh_a', 'id-25000', 2000, 0, 0), true);
});

test('a prune while the claims are still being read needs none of them, and leaves the rest right', (t) => {
  // The first 10,000 claims are young, the next 15,000 old.
  const { claims, db } = reopenedOneStepIn(t, (i) => (i < 10_000 ? 9 * DAY : 1000));
  // The prune takes the oldest 10,000, none of them read yet.
  const gone = db.transaction(() => claims.prune(5 * DAY, 10_000)).immediate();
  claims.committed(true);
  assert.equal(gone, 10_000);
  assert.deepEqual(claims.loading(), { loaded: 10_000 });
  while (!claims.loadStep());
  assert.equal(claims.loading(), undefined);
  for (const i of [0, 9_999, 20_000, 24_999]) assert.equal(claims.claim('wh_a', `id-${i}`, 9 * DAY, 0, 0), false, `id-${i} is still claimed`);
  for (const i of [10_000, 19_999]) assert.equal(claims.claim('wh_a', `id-${i}`, 9 * DAY, 0, 0), true, `id-${i} was forgotten`);
});

test('an upgraded database gives its claims their hashes 10,000 at a time, each step committed on its own', (t) => {
  const { path, db } = database(t);
  const first = memoryClaims(db);
  db.transaction(() => {
    for (let i = 0; i < 25_000; i++) first.claim('wh_a', `id-${i}`, 1000, i + 1, 0);
  }).immediate();
  db.prepare('UPDATE delivery_claims SET hash = NULL').run();
  db.close();
  const again = openDatabase(path);
  t.after(() => again.close());
  const claims = memoryClaims(again);
  const unhashed = () => again.prepare('SELECT COUNT(*) FROM delivery_claims WHERE hash IS NULL').pluck().get();
  const seen: unknown[] = [];
  while (!claims.loadStep()) seen.push(unhashed());
  assert.deepEqual(seen, [15_000, 5_000, 0]);
  assert.equal(claims.claim('wh_a', 'id-12345', 2000, 0, 0), false);
});
