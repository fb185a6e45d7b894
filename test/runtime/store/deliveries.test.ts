import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FakeClock } from '../../../runtime/clock.ts';
import { migrate, readMigrations } from '../../../runtime/store/db.ts';
import { openStore, type Store } from '../../../runtime/store/index.ts';
import { forEachEngine, testDatabase, type TestDatabase } from '../../helpers/postgres.ts';
import { PostgresDatabase } from '../../../runtime/store/postgres/db.ts';
import { PRUNE_BATCH, PRUNE_STEP_BYTES, type AcceptItem, type DeliveryFacts, type DeliveryWrite } from '../../../runtime/store/deliveries.ts';

/** Group commit in the store (pipeline steps 8-9 and identity, docs/ingress.md): acceptBatch keeps one-by-one semantics. */

function setup(_t: unknown, db: TestDatabase) {
  const clock = new FakeClock();
  const store = db.open({ clock });
  return { clock, store };
}

const facts = (store: Store, deliveryId: string, webhookUid = 'wh_a'): DeliveryFacts => ({
  webhookUid,
  deliveryId,
  size: 2,
  receivedAt: new Date(0),
  sender: '127.0.0.1',
});
const item = (store: Store, id: string, extra: Partial<AcceptItem> = {}): AcceptItem => ({ facts: facts(store, id), payload: Buffer.from(`"${id}"`), ...extra });
const outcomes = (store: Store, id: string) => store.deliveries.list('wh_a', 100).filter((e) => e.deliveryId === id).map((e) => e.outcome).reverse();

forEachEngine('a batch commits every delivery in arrival order; the same identity twice is Accepted then Duplicate', (t, db) => {
  const { store } = setup(t, db);
  const results = store.deliveries.acceptBatch([item(store, 'a'), item(store, 'b'), item(store, 'a'), item(store, 'a')], 30);
  assert.deepEqual(
    results.map((r) => (r.ok ? r.result.outcome : 'error')),
    ['accepted', 'accepted', 'duplicate', 'duplicate'],
  );
  assert.deepEqual(outcomes(store, 'a'), ['accepted', 'duplicate', 'duplicate']);
  assert.equal(store.deliveries.get('wh_a', 'a')!.hasPayload, true);
  assert.deepEqual(store.deliveries.payload(store.deliveries.get('wh_a', 'a')!.seq), Buffer.from('"a"'));
  // Only the Accepted entry keeps the payload; a Duplicate's is dropped.
  const entries = store.deliveries.list('wh_a', 100).filter((e) => e.deliveryId === 'a');
  assert.deepEqual(entries.map((e) => [e.outcome, e.hasPayload, store.deliveries.payload(e.seq) !== undefined]).reverse(), [
    ['accepted', true, true],
    ['duplicate', false, false],
    ['duplicate', false, false],
  ]);
  // Across batches too: a later batch sees the committed identity.
  const again = store.deliveries.acceptBatch([item(store, 'b')], 30);
  assert.equal(again[0].ok && again[0].result.outcome, 'duplicate');
  // Identities are per webhook.
  const other = store.deliveries.acceptBatch([{ ...item(store, 'a'), facts: facts(store, 'a', 'wh_b') }], 30);
  assert.equal(other[0].ok && other[0].result.outcome, 'accepted');
});

forEachEngine('a mixed batch: rejections, one identity thrice, a live claim and an expired one, each as one by one would have it', (t, db) => {
  const { store, clock } = setup(t, db);
  const DAY = 86_400_000;
  const at = (id: string, ms: number, extra: Partial<AcceptItem> = {}): DeliveryWrite => ({ kind: 'accept', ...item(store, id, extra), facts: { ...facts(store, id), receivedAt: new Date(ms) } });
  // 'old' is claimed 40 days before the batch (expired at 30), 'live' 10 days before.
  store.deliveries.writeBatch([at('old', 0), at('live', 30 * DAY)], { identityDays: 30, rejectedKeep: 1000 });
  clock.set(40 * DAY);
  const hooked: string[] = [];
  const onAccepted = (d: { deliveryId: string; seq: number }) => void hooked.push(`${d.deliveryId}@${d.seq}`);
  const now = 40 * DAY;
  const batch: DeliveryWrite[] = [
    { kind: 'reject', facts: { ...facts(store, 'r1'), receivedAt: new Date(now) }, outcome: 'rejected_auth', reason: 'bad_credentials' },
    at('n', now, { onAccepted }),
    at('n', now, { onAccepted }),
    at('old', now, { onAccepted }),
    at('live', now, { onAccepted }),
    { kind: 'reject', facts: { ...facts(store, 'n'), receivedAt: new Date(now) }, outcome: 'rejected_invalid_json', reason: null },
    at('n', now, { onAccepted }),
  ];
  const results = store.deliveries.writeBatch(batch, { identityDays: 30, rejectedKeep: 1000 });
  assert.deepEqual(
    results.map((r) => (r.ok ? r.result.outcome : 'error')),
    ['rejected_auth', 'accepted', 'duplicate', 'accepted', 'duplicate', 'rejected_invalid_json', 'duplicate'],
  );
  const seqs = results.map((r) => (r.ok ? r.result.seq : 0));
  // The log's order is the arrival order.
  assert.deepEqual([...seqs].sort((a, b) => a - b), seqs);
  // Hooks ran for the Accepted ones only, once each, with their entries' seqs.
  assert.deepEqual(hooked, [`n@${seqs[1]}`, `old@${seqs[3]}`]);
  assert.deepEqual(outcomes(store, 'n'), ['accepted', 'duplicate', 'rejected_invalid_json', 'duplicate']);
  assert.deepEqual(outcomes(store, 'old'), ['accepted', 'accepted'], 'the expired claim is taken over by a new Accepted entry');
  assert.deepEqual(outcomes(store, 'live'), ['accepted', 'duplicate']);
  assert.equal(store.deliveries.get('wh_a', 'old')!.seq, seqs[3], 'the identity now points at the new entry');
  assert.equal(store.deliveries.get('wh_a', 'live')!.seq < seqs[0], true, 'the live claim still points at its own');
  // Payloads stay with Accepted entries only.
  const kept = store.deliveries.list('wh_a', 100).filter((e) => e.seq >= seqs[0]).map((e) => [e.deliveryId, e.outcome, e.hasPayload]).reverse();
  assert.deepEqual(kept, [
    ['r1', 'rejected_auth', false],
    ['n', 'accepted', true],
    ['n', 'duplicate', false],
    ['old', 'accepted', true],
    ['live', 'duplicate', false],
    ['n', 'rejected_invalid_json', false],
    ['n', 'duplicate', false],
  ]);
});

test('on PostgreSQL a group commit of small deliveries is one statement, not one per delivery; past 1 MB of payloads, one per delivery', async (t) => {
  const db = await testDatabase(t, 'postgres');
  if (!db) return;
  const store = db.open({ clock: new FakeClock() });
  const proto = PostgresDatabase.prototype as unknown as { request: (req: { mode: string; sql?: string }) => unknown };
  const request = proto.request;
  const sent: string[] = [];
  proto.request = function (this: unknown, req: { mode: string; sql?: string }, ...rest: unknown[]) {
    sent.push(`${req.mode} ${(req.sql ?? '').trim().split(/\s+/)[0]}`);
    return (request as (...a: unknown[]) => unknown).call(this, req, ...rest);
  };
  t.after(() => {
    proto.request = request;
  });
  const results = store.deliveries.acceptBatch(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((id) => item(store, id)), 30);
  assert.deepEqual(results.map((r) => r.ok && r.result.outcome), Array(8).fill('accepted'));
  // The transaction's BEGIN and COMMIT, and between them the one statement of entries and claims.
  assert.deepEqual(sent.filter((s) => s.startsWith('query')), ['query WITH']);
  assert.ok(sent.length <= 3, sent.join(', '));

  // Past 1 MB of payloads a batch goes item by item (a bytea array would travel as text, twice
  // its size): one statement per delivery, the same outcomes, the payloads whole.
  sent.length = 0;
  const big = (id: string) => item(store, id, { payload: Buffer.alloc(600 * 1024, id) });
  const large = store.deliveries.acceptBatch([big('i'), big('j'), big('i')], 30);
  proto.request = request;
  assert.deepEqual(large.map((r) => r.ok && r.result.outcome), ['accepted', 'accepted', 'duplicate']);
  assert.equal(sent.filter((s) => s === 'query WITH').length, 3, sent.join(', '));
  assert.deepEqual(store.deliveries.payload(store.deliveries.get('wh_a', 'j')!.seq), Buffer.alloc(600 * 1024, 'j'));
});

forEachEngine('a throwing hook rolls back only its own delivery; its identity stays free', (t, db) => {
  const { store } = setup(t, db);
  const seen: string[] = [];
  const hook = (d: { deliveryId: string }) => {
    assert.equal(store.db.inTransaction, true);
    seen.push(d.deliveryId);
  };
  const failing = () => {
    throw new Error('run creation failed');
  };
  const results = store.deliveries.acceptBatch(
    [item(store, 'x', { onAccepted: hook }), item(store, 'y', { onAccepted: failing }), item(store, 'y', { onAccepted: hook }), item(store, 'z', { onAccepted: hook })],
    30,
  );
  assert.equal(results[0].ok, true);
  assert.equal(results[1].ok, false);
  assert.match(String((results[1] as { error: Error }).error.message), /run creation failed/);
  // The second 'y' comes after the failed one in the same batch: it is the Accepted one.
  assert.deepEqual(results.slice(2).map((r) => r.ok && r.result.outcome), ['accepted', 'accepted']);
  // The batch is first written without a savepoint per item; the failing hook rolled that attempt
  // back, and the redo (a savepoint per item) called x's hook again. Only the redo committed.
  assert.deepEqual(seen, ['x', 'x', 'y', 'z']);
  assert.deepEqual(outcomes(store, 'y'), ['accepted'], 'exactly one log entry for y: the failed one left none');
  assert.equal(store.deliveries.count('wh_a'), 3);
});

forEachEngine('when the database ends the transaction, the batch fails as a whole and nothing of it is committed', (t, db) => {
  const { store } = setup(t, db);
  // A hook that ends the transaction under the batch (as a disk-full error would).
  const abort = () => store.db.exec('ROLLBACK');
  assert.throws(() => store.deliveries.acceptBatch([item(store, 'p'), item(store, 'q', { onAccepted: abort }), item(store, 'r')], 30));
  assert.equal(store.db.inTransaction, false);
  assert.equal(store.deliveries.count('wh_a'), 0);
  // The identities were not kept: the retries are Accepted.
  const retry = store.deliveries.acceptBatch([item(store, 'p'), item(store, 'q'), item(store, 'r')], 30);
  assert.deepEqual(retry.map((r) => r.ok && r.result.outcome), ['accepted', 'accepted', 'accepted']);
});

forEachEngine('acceptOrDuplicate (one delivery, its own transaction) agrees with a batch of one', (t, db) => {
  const { store } = setup(t, db);
  assert.equal(store.deliveries.acceptOrDuplicate(facts(store, 'one'), Buffer.from('1'), 30).outcome, 'accepted');
  const [r] = store.deliveries.acceptBatch([item(store, 'one')], 30);
  assert.equal(r.ok && r.result.outcome, 'duplicate');
});

const DAY = 86_400_000;
const LIMITS = { keep: 50, days: 7, identityDays: 30, rejectedKeep: 1000 };
const at = (ms: number, webhookUid: string, deliveryId: string): DeliveryFacts => ({ webhookUid, deliveryId, size: 2, receivedAt: new Date(ms) });
const accept = (f: DeliveryFacts): DeliveryWrite => ({ kind: 'accept', facts: f, payload: Buffer.from('{}') });
const reject = (f: DeliveryFacts): DeliveryWrite => ({ kind: 'reject', facts: f, outcome: 'rejected_auth', reason: 'bad_credentials' });
const ids = (store: Store, uid: string) => store.deliveries.list(uid, 1000).map((e) => e.deliveryId).reverse();
const write = (store: Store, items: DeliveryWrite[], rejectedKeep = 1000) => {
  for (const r of store.deliveries.writeBatch(items, { identityDays: 30, rejectedKeep })) assert.equal(r.ok, true);
};

forEachEngine('a pruning step also stops at PRUNE_STEP_BYTES of payload, so big payloads never make a long step', (t, db) => {
  const { store } = setup(t, db);
  const t0 = Date.parse('2026-03-01T00:00:00.000Z');
  const big = Buffer.alloc(600_000, 0x61);
  const items: DeliveryWrite[] = Array.from({ length: 60 }, (_, i) => ({ kind: 'accept', facts: { webhookUid: 'wh_c', deliveryId: `big-${i}`, size: big.length, receivedAt: new Date(t0 + i) }, payload: big }));
  write(store, items);
  const now = new Date(t0 + 8 * DAY);
  const steps = [];
  for (;;) {
    const step = store.deliveries.pruneStep(now, LIMITS, PRUNE_BATCH);
    steps.push(step.entries);
    if (!step.more) break;
  }
  const most = Math.ceil(PRUNE_STEP_BYTES / big.length);
  assert.ok(steps.every((n) => n <= most), `entries per step: ${steps.join(', ')}`);
  assert.equal(steps.reduce((a, b) => a + b, 0), 10, 'the 10 oldest beyond the newest 50 go, over several steps');
  assert.equal(ids(store, 'wh_c')[0], 'big-10');
});

forEachEngine('pruning goes in bounded steps and removes exactly what is outside the newest 50 and older than 7 days', (t, db) => {
  const { store } = setup(t, db);
  const t0 = Date.parse('2026-03-01T00:00:00.000Z');
  // wh_a: 60 old entries (Accepted, with some Rejected among them), then 10 young ones; wh_b: 30 old.
  const old = Array.from({ length: 60 }, (_, i) => (i % 7 === 3 ? reject : accept)(at(t0 + i, 'wh_a', `old-${i}`)));
  write(store, [...old, ...Array.from({ length: 30 }, (_, i) => accept(at(t0 + i, 'wh_b', `b-${i}`)))]);
  write(store, Array.from({ length: 10 }, (_, i) => accept(at(t0 + 8 * DAY + i, 'wh_a', `new-${i}`))));
  const oldSeq = store.deliveries.get('wh_a', 'old-0')!.seq;
  assert.ok(store.deliveries.payload(oldSeq));

  const now = new Date(t0 + 8 * DAY + 1000);
  const steps = [];
  for (;;) {
    const step = store.deliveries.pruneStep(now, LIMITS, 7);
    assert.ok(step.entries <= 7, 'a step deletes at most its budget');
    steps.push(step);
    if (!step.more) break;
  }
  assert.ok(steps.length >= 3, `${steps.length} steps`);
  assert.equal(steps.reduce((n, s) => n + s.entries, 0), 20);
  assert.deepEqual(ids(store, 'wh_a'), [...Array.from({ length: 40 }, (_, i) => `old-${i + 20}`), ...Array.from({ length: 10 }, (_, i) => `new-${i}`)]);
  assert.equal(ids(store, 'wh_b').length, 30, 'fewer than 50: all kept, however old');
  assert.equal(store.deliveries.payload(oldSeq), undefined, 'the payload went with its entry');
  assert.ok(store.deliveries.payload(store.deliveries.get('wh_a', 'old-20')!.seq));

  // The identities of pruned entries stay until identityDays: a replay is still a Duplicate.
  const [replay] = store.deliveries.writeBatch([accept(at(now.getTime(), 'wh_a', 'old-0'))], { identityDays: 30, rejectedKeep: 1000 });
  assert.equal(replay.ok && replay.result.outcome, 'duplicate');
  const later = new Date(t0 + 31 * DAY);
  const gone = store.deliveries.prune(later, LIMITS);
  // Forgotten: the identities of the 17 Accepted entries pruned above and of old-20, pruned now.
  // Those of entries still in the log stay, to find them by id, but no longer dedup.
  assert.equal(gone.identities, 18);
  assert.equal(store.deliveries.get('wh_a', 'old-21')!.outcome, 'accepted');
  const replays = ['old-1', 'old-21', 'old-21'].map((id) => accept(at(later.getTime(), 'wh_a', id)));
  const outcomes = store.deliveries.writeBatch(replays, { identityDays: 30, rejectedKeep: 1000 }).map((r) => r.ok && r.result.outcome);
  assert.deepEqual(outcomes, ['accepted', 'accepted', 'duplicate']);
  const found = store.deliveries.get('wh_a', 'old-21')!;
  assert.equal(found.receivedAt, later.toISOString(), 'the Accepted entry of the replay, the newest');
});

forEachEngine('the cap keeps the newest N Rejected entries of each webhook and leaves Accepted and Duplicate ones alone', (t, db) => {
  const { store } = setup(t, db);
  const t0 = Date.parse('2026-03-01T00:00:00.000Z');
  // Several batches, as a flood would come: rejections of two webhooks among valid deliveries.
  for (let b = 0; b < 4; b++) {
    const items: DeliveryWrite[] = [];
    for (let i = 0; i < 5; i++) {
      const n = b * 5 + i;
      items.push(reject(at(t0 + n, 'wh_a', `bad-${n}`)), accept(at(t0 + n, 'wh_a', `ok-${n}`)), reject(at(t0 + n, 'wh_b', `x-${n}`)));
    }
    items.push(accept(at(t0, 'wh_a', 'ok-0'))); // a Duplicate
    write(store, items, 5);
  }
  const entries = store.deliveries.list('wh_a', 1000);
  assert.deepEqual(entries.filter((e) => e.outcome === 'rejected_auth').map((e) => e.deliveryId).reverse(), ['bad-15', 'bad-16', 'bad-17', 'bad-18', 'bad-19']);
  assert.equal(entries.filter((e) => e.outcome === 'accepted').length, 20);
  assert.equal(entries.filter((e) => e.outcome === 'duplicate').length, 4);
  assert.deepEqual(ids(store, 'wh_b'), ['x-15', 'x-16', 'x-17', 'x-18', 'x-19']);

  // A larger cap is trimmed once a tenth of it has come in, so between trims a webhook holds at
  // most 10% more; the background pruning brings it back to the cap itself.
  write(store, Array.from({ length: 25 }, (_, i) => reject(at(t0 + 100 + i, 'wh_c', `c-${i}`))), 20);
  const held = store.deliveries.count('wh_c');
  assert.ok(held >= 20 && held <= 22, `${held} held`);
  store.deliveries.prune(new Date(t0 + 1000), { ...LIMITS, rejectedKeep: 20 });
  assert.deepEqual(ids(store, 'wh_c'), Array.from({ length: 20 }, (_, i) => `c-${i + 5}`));
});

/**
 * A SQLite file at the schema before migration `version`, open for the test to write rows the way
 * that schema did (a PostgreSQL database starts at the current schema, so these tests are SQLite's).
 */
function schemaBefore(t: { after(fn: () => void): void }, version: number): { path: string; db: Database.Database } {
  const dir = mkdtempSync(join(tmpdir(), `factory-deliveries-${version}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'factory.db');
  const db = new Database(path);
  migrate(db, readMigrations().filter((m) => m.version < version));
  return { path, db };
}

test('migration 008 keeps every entry of an older log findable by id', (t) => {
  // A log written by the schema before 008: an Accepted entry with its identity, one whose identity
  // was already forgotten (older than 30 days, kept among the newest 50), a Duplicate, a rejection.
  const { path, db } = schemaBefore(t, 8);
  const entry = db.prepare(
    `INSERT INTO deliveries (webhook_uid, delivery_id, outcome, size, received_at, received_ms) VALUES ('wh_a', ?, ?, 2, '2026-01-01T00:00:00.000Z', ?)`,
  );
  const seqA = entry.run('a', 'accepted', 1000).lastInsertRowid;
  db.prepare('INSERT INTO delivery_payloads (delivery_seq, body) VALUES (?, ?)').run(seqA, Buffer.from('"a"'));
  db.prepare(`INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms) VALUES ('wh_a', 'a', 1000)`).run();
  entry.run('a', 'duplicate', 2000);
  const seqOld = entry.run('old', 'accepted', 500).lastInsertRowid;
  entry.run('bad', 'rejected_auth', 3000);
  db.close();

  const store = openStore({ path, clock: new FakeClock() });
  t.after(() => store.close());
  assert.deepEqual([store.deliveries.get('wh_a', 'a')!.seq, store.deliveries.get('wh_a', 'a')!.hasPayload], [Number(seqA), true]);
  // Migration 015 moved the stored payload into its entry's row, byte for byte.
  assert.deepEqual(store.deliveries.payload(Number(seqA)), Buffer.from('"a"'));
  assert.equal(store.deliveries.get('wh_a', 'old')!.hasPayload, false);
  assert.equal(store.deliveries.get('wh_a', 'old')!.seq, Number(seqOld));
  assert.equal(store.deliveries.get('wh_a', 'bad')!.outcome, 'rejected_auth');
  // The identity given back to 'old' is as old as its entry: a replay is Accepted, as before.
  const now = new Date(1000 + 40 * DAY);
  const [replay] = store.deliveries.writeBatch([accept(at(now.getTime(), 'wh_a', 'old'))], { identityDays: 30, rejectedKeep: 1000 });
  assert.equal(replay.ok && replay.result.outcome, 'accepted');
  // 'a' kept its identity: within 30 days a replay is a Duplicate, and 'a' is still its entry.
  const [dup] = store.deliveries.writeBatch([accept(at(1000 + 10 * DAY, 'wh_a', 'a'))], { identityDays: 30, rejectedKeep: 1000 });
  assert.equal(dup.ok && dup.result.outcome, 'duplicate');
  assert.equal(store.deliveries.get('wh_a', 'a')!.seq, Number(seqA));
});

forEachEngine('an Accepted entry lists the runs its own delivery started, not those of an earlier entry with the same id', (t, db) => {
  const { store } = setup(t, db);
  const run = (prompt: string, d?: { seq: number; deliveryId: string }) => ({
    prompt,
    environmentId: 'default',
    source: 'WEBHOOK' as const,
    creator: { type: 'automation' as const, name: 'triage' },
    ...(d ? { webhookUid: 'wh_a', deliveryId: d.deliveryId, deliverySeq: d.seq } : {}),
  });
  const startRun = (prompt: string) => (d: { seq: number; deliveryId: string }) => void store.runs.insertInTx([run(prompt, d)]);
  // 'x' is Accepted, then Accepted again 40 days later, once its identity was forgotten: two entries, one id.
  const acceptWith = (ms: number, onAccepted: AcceptItem['onAccepted']): DeliveryWrite => ({ kind: 'accept', facts: at(ms, 'wh_a', 'x'), payload: Buffer.from('{}'), onAccepted });
  const [first] = store.deliveries.writeBatch([acceptWith(0, startRun('first'))], LIMITS);
  const [second] = store.deliveries.writeBatch([acceptWith(40 * DAY, startRun('second'))], LIMITS);
  assert.ok(first.ok && second.ok && first.result.outcome === 'accepted' && second.result.outcome === 'accepted');
  const prompts = (seq: number) => store.runs.byEntry(seq).map((r) => store.runs.get(r.run_id)!.prompt);
  assert.deepEqual(prompts(first.result.seq), ['first']);
  assert.deepEqual(prompts(second.result.seq), ['second']);
  // A run made for an entry later (a replay, a retry) lists under it after the first, in creation order.
  store.transaction(() => store.runs.insertInTx([run('replayed', { seq: first.result.seq, deliveryId: 'x' })]));
  assert.deepEqual(prompts(first.result.seq), ['first', 'replayed']);
  const [firstRun] = store.runs.byEntry(first.result.seq);
  assert.equal(store.runs.entryOf(firstRun.run_id), first.result.seq);
  // A run no delivery started belongs to no entry.
  assert.equal(store.runs.entryOf(store.runs.create(run('api')).run_id), null);
});

test('migration 016 points each existing webhook run at the newest Accepted entry of its delivery id', (t) => {
  const { path, db } = schemaBefore(t, 16);
  const entry = db.prepare(
    `INSERT INTO deliveries (webhook_uid, delivery_id, outcome, size, received_at, received_ms) VALUES (?, ?, ?, 2, '2026-01-01T00:00:00.000Z', 0)`,
  );
  const oldA = Number(entry.run('wh_a', 'a', 'accepted').lastInsertRowid);
  entry.run('wh_a', 'a', 'duplicate');
  const newA = Number(entry.run('wh_a', 'a', 'accepted').lastInsertRowid);
  const b = Number(entry.run('wh_a', 'b', 'accepted').lastInsertRowid);
  entry.run('wh_b', 'a', 'rejected_auth');
  const runRow = db.prepare(
    `INSERT INTO runs (run_id, state, prompt, environment_id, source, creator_type, creator_name, webhook_uid, delivery_id, created_at, updated_at)
     VALUES (?, 'QUEUED', 'p', 'default', ?, 'automation', 'triage', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  );
  runRow.run('run_a', 'WEBHOOK', 'wh_a', 'a');
  runRow.run('run_b', 'WEBHOOK', 'wh_a', 'b');
  runRow.run('run_pruned', 'WEBHOOK', 'wh_a', 'gone'); // its entry was pruned
  runRow.run('run_other', 'WEBHOOK', 'wh_b', 'a'); // only a rejection of that id on wh_b
  runRow.run('run_api', 'API', null, null);
  db.close();

  const store = openStore({ path, clock: new FakeClock() });
  t.after(() => store.close());
  assert.deepEqual(store.runs.byEntry(newA).map((r) => r.run_id), ['run_a']);
  assert.deepEqual(store.runs.byEntry(oldA), []);
  assert.deepEqual(store.runs.byEntry(b).map((r) => r.run_id), ['run_b']);
  for (const id of ['run_pruned', 'run_other', 'run_api']) assert.equal(store.runs.entryOf(id), null, id);
  const check = new Database(path, { readonly: true });
  t.after(() => check.close());
  const indexes = check.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('runs', 'deliveries') ORDER BY name`).pluck().all();
  assert.ok(indexes.includes('runs_by_entry') && !indexes.includes('runs_delivery') && !indexes.includes('migration_016_accepted'), String(indexes));
});

forEachEngine('a webhook run reads its event payload from its log entry, and gets its own copy before retention deletes the entry', (t, db) => {
  const { store } = setup(t, db);
  const t0 = Date.parse('2026-03-01T00:00:00.000Z');
  const payloadOf = (i: number) => Buffer.from(JSON.stringify({ n: i, text: `payload ${i} ` + 'é'.repeat(i) }));
  const run = (d: { seq: number; deliveryId: string; payload: Buffer }, name: string, inEntry = true) => ({
    prompt: name,
    environmentId: 'default',
    source: 'WEBHOOK' as const,
    creator: { type: 'automation' as const, name },
    webhookUid: 'wh_a',
    deliveryId: d.deliveryId,
    deliverySeq: d.seq,
    attachments: [{ name: 'event-payload.json', bytes: d.payload, inEntry }],
  });
  // 60 old deliveries, each starting two runs that read the entry, and one with an ordinary copy.
  const items: DeliveryWrite[] = Array.from({ length: 60 }, (_, i) => ({
    kind: 'accept',
    facts: at(t0 + i, 'wh_a', `d-${i}`),
    payload: payloadOf(i),
    onAccepted: (d) => void store.runs.insertInTx([run(d, 'first'), run(d, 'second'), run(d, 'copied', false)]),
  }));
  for (const r of store.deliveries.writeBatch(items, LIMITS)) assert.equal(r.ok, true);
  const row = store.db.prepare('SELECT length(bytes) AS n, entry_seq FROM run_attachments WHERE run_id = ?');
  const entrySeqs = Array.from({ length: 60 }, (_, i) => store.deliveries.get('wh_a', `d-${i}`)!.seq);
  const runsOf = (i: number) => store.runs.byEntry(entrySeqs[i]).map((r) => r.run_id);
  for (const i of [0, 59]) {
    const [first, second, copied] = runsOf(i);
    for (const id of [first, second]) {
      assert.deepEqual({ ...(row.get(id) as object) }, { n: 0, entry_seq: entrySeqs[i] }, 'no copy of the bytes in the row');
      assert.deepEqual(store.runs.attachmentBytes(id), [{ name: 'event-payload.json', bytes: payloadOf(i) }]);
      const [meta] = store.runs.get(id)!.attachments;
      assert.equal(meta.size, payloadOf(i).length);
    }
    assert.deepEqual({ ...(row.get(copied) as object) }, { n: payloadOf(i).length, entry_seq: null });
  }

  // Retention deletes the 10 oldest entries (outside the newest 50, older than 7 days); their runs
  // keep the exact bytes, now in their own rows, and the entries kept still lend theirs.
  const deleted = store.deliveries.prune(new Date(t0 + 8 * DAY), LIMITS);
  assert.equal(deleted.entries, 10);
  for (let i = 0; i < 60; i++) {
    const pruned = i < 10;
    assert.equal(store.deliveries.get('wh_a', `d-${i}`) === undefined, pruned, `d-${i}`);
    for (const id of runsOf(i)) {
      assert.deepEqual(store.runs.attachmentBytes(id), [{ name: 'event-payload.json', bytes: payloadOf(i) }], `${id} of d-${i}`);
      const r = row.get(id) as { n: number; entry_seq: number | null };
      if (pruned || store.runs.get(id)!.creator.name === 'copied') assert.deepEqual({ ...r }, { n: payloadOf(i).length, entry_seq: null });
      else assert.deepEqual({ ...r }, { n: 0, entry_seq: entrySeqs[i] });
    }
  }

  // A run not started by a delivery has nothing to read from: its bytes are its own whatever it asks.
  const api = store.runs.create({ prompt: 'api', environmentId: 'default', source: 'API', creator: { type: 'user', name: 'u' }, attachments: [{ name: 'a.png', bytes: Buffer.from([1, 2, 3]), inEntry: true }] });
  assert.deepEqual({ ...(row.get(api.run_id) as object) }, { n: 3, entry_seq: null });
  // An entry gone without retention (never done by the runtime) is an error, not an empty file.
  const [kept] = runsOf(30);
  store.db.prepare('DELETE FROM deliveries WHERE seq = ?').run(entrySeqs[30]);
  assert.throws(() => store.runs.attachmentBytes(kept), new RegExp(`is kept in log entry ${entrySeqs[30]}, which holds no payload`));
});

test('migration 017 leaves existing attachments with their bytes', (t) => {
  const { path, db } = schemaBefore(t, 17);
  db.prepare(
    `INSERT INTO runs (run_id, state, prompt, environment_id, source, creator_type, creator_name, created_at, updated_at)
     VALUES ('run_a', 'QUEUED', 'p', 'default', 'API', 'user', 'u', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
  ).run();
  db.prepare(`INSERT INTO run_attachments (run_id, name, bytes, size, sha256) VALUES ('run_a', 'a.json', ?, 2, 'x')`).run(Buffer.from('{}'));
  db.close();
  const store = openStore({ path, clock: new FakeClock() });
  t.after(() => store.close());
  assert.deepEqual(store.runs.attachmentBytes('run_a'), [{ name: 'a.json', bytes: Buffer.from('{}') }]);
  assert.equal(store.db.prepare(`SELECT entry_seq FROM run_attachments WHERE run_id = 'run_a'`).pluck().get(), null);
});
