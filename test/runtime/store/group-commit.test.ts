import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { FakeClock } from '../../../runtime/clock.ts';
import { GroupCommit, savepointBatch } from '../../../runtime/store/group-commit.ts';
import { forEachEngine, type TestDatabase } from '../../helpers/postgres.ts';
import type { AcceptItem } from '../../../runtime/store/deliveries.ts';
import { createHook, deliver } from '../ingress/helpers.ts';
import { startTestRuntime } from '../helpers.ts';

/** The group-commit queue (runtime/store/group-commit.ts) over a real store. */

function setup(_t: unknown, db: TestDatabase) {
  const store = db.open({ clock: new FakeClock() });
  const batches: number[] = [];
  const commits = new GroupCommit((items: readonly AcceptItem[]) => {
    batches.push(items.length);
    return store.deliveries.acceptBatch(items, 30);
  });
  const item = (id: string, onAccepted?: AcceptItem['onAccepted']): AcceptItem => ({
    facts: { webhookUid: 'wh_a', deliveryId: id, size: 2, receivedAt: new Date(0) },
    payload: Buffer.from('{}'),
    onAccepted,
  });
  return { store, commits, batches, item };
}

// A few side by side, each on a database of its own: a PostgreSQL test spends much of its time
// waiting on the server (its schema's creation and drop).
describe('group commit', { concurrency: 4 }, () => {
  forEachEngine('deliveries queued in one turn are one commit, and each settles only after it', async (t, db) => {
    const { store, commits, batches, item } = setup(t, db);
    const ids = ['a', 'b', 'a', 'c', 'b'];
    const pending = ids.map((id) => commits.submit(item(id)));
    // Nothing is written before the commit, so nothing can have been answered yet.
    assert.equal(commits.pending, 5);
    assert.equal(store.deliveries.count('wh_a'), 0);
    const results = await Promise.all(pending);
    assert.deepEqual(batches, [5]);
    assert.deepEqual(results.map((r) => r.outcome), ['accepted', 'accepted', 'duplicate', 'accepted', 'duplicate']);
    assert.equal(store.deliveries.count('wh_a'), 5);
    // A later turn is a new commit.
    assert.equal((await commits.submit(item('c'))).outcome, 'duplicate');
    assert.deepEqual(batches, [5, 1]);
  });

  forEachEngine('a batch larger than MAX_BATCH is split into several commits in the same turn, in order', async (t, db) => {
    const { commits, batches, item } = setup(t, db);
    const n = GroupCommit.MAX_BATCH + 3;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => commits.submit(item(i === n - 1 ? 'id-0' : `id-${i}`))));
    assert.deepEqual(batches, [GroupCommit.MAX_BATCH, 3]);
    assert.equal(results[n - 1].outcome, 'duplicate', 'the last one repeats the first identity, committed in the previous batch');
  });

  forEachEngine('a failing hook rejects only its own delivery; a failed transaction rejects the whole batch', async (t, db) => {
    const { store, commits, item } = setup(t, db);
    const boom = () => {
      throw new Error('hook failed');
    };
    const [ok, failed, later] = await Promise.allSettled([commits.submit(item('k')), commits.submit(item('l', boom)), commits.submit(item('l'))]);
    assert.equal(ok.status === 'fulfilled' && ok.value.outcome, 'accepted');
    assert.equal(failed.status, 'rejected');
    assert.equal(later.status === 'fulfilled' && later.value.outcome, 'accepted');

    const abort = () => store.db.exec('ROLLBACK');
    const all = await Promise.allSettled([commits.submit(item('m')), commits.submit(item('n', abort))]);
    assert.deepEqual(all.map((r) => r.status), ['rejected', 'rejected']);
    assert.equal(store.deliveries.get('wh_a', 'm'), undefined);
    // The queue keeps working after a failed batch.
    assert.equal((await commits.submit(item('m'))).outcome, 'accepted');
  });

  forEachEngine('through the server: racing duplicates across batches give one Accepted each, and one log entry per 202', async (t, db) => {
    const onPostgres = db.engine === 'postgres' ? { flags: { database: db.where }, env: { FACTORY_MASTER_KEY: randomBytes(32).toString('base64') } } : {};
    const rt = await startTestRuntime({ ...onPostgres, flags: { ...onPostgres.flags, limits: { deliveriesPerMinute: 100_000, failedAuthPerMinute: 100_000 } } });
    t.after(() => rt.stop());
    const hook = await createHook(rt, 'gc', { name: 'race' });
    rt.services.ingress!.onAccepted.push((_webhook, delivery, body) => {
      // The pipeline hands over the body it parsed (no second parse).
      assert.deepEqual(body, { json: JSON.parse(delivery.payload.toString('utf8')) });
      if (delivery.deliveryId === 'bad') throw new Error('run creation failed');
    });
    const ids = ['bad', ...Array.from({ length: 11 }, (_, i) => `id-${i}`)];
    const sends = ids.flatMap((id) => Array.from({ length: 5 }, (_, n) => ({ id, n })));
    const results = await Promise.all(
      sends.map(async ({ id, n }) => {
        const res = await deliver(hook.url, JSON.stringify({ id, n }), { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': id });
        return { id, status: res.status, body: (await res.json()) as { delivery_id?: string } };
      }),
    );
    for (const r of results) {
      if (r.id === 'bad') assert.equal(r.status, 500);
      else assert.deepEqual([r.status, r.body.delivery_id], [202, r.id]);
    }
    const log = rt.store.deliveries.list(hook.uid, 100);
    assert.equal(log.length, results.filter((r) => r.status === 202).length, 'exactly one log entry per 202');
    for (const id of ids.slice(1)) {
      const entries = log.filter((e) => e.deliveryId === id);
      assert.deepEqual(entries.map((e) => e.outcome).sort(), ['accepted', 'duplicate', 'duplicate', 'duplicate', 'duplicate']);
    }
    assert.equal(log.filter((e) => e.deliveryId === 'bad').length, 0);
    // Stopped here, not only in t.after: the test database's own clean-up (registered first, so run
    // first) drops the PostgreSQL schema, and the runtime's executor must not poll a dropped schema.
    await rt.stop();
  });
});

/**
 * `savepointBatch` on its own, over a SQLite database that reports every statement it runs: a
 * batch that goes through is written without a savepoint per item; one item that throws costs a
 * second attempt, one savepoint per item, with the one-by-one meaning; a `finish` that throws is
 * not retried.
 */
describe('savepointBatch', () => {
  const setupBatch = (finish?: () => void) => {
    const statements: string[] = [];
    const db = new Database(':memory:', { verbose: (sql) => statements.push(String(sql)) });
    db.exec('CREATE TABLE t (x INTEGER NOT NULL)');
    const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
    const calls: number[] = [];
    const batch = savepointBatch(
      db,
      (x: number) => {
        calls.push(x);
        insert.run(x);
        if (x < 0) throw new Error(`item ${x} failed`);
        return x * 10;
      },
      finish,
    );
    const rows = () => (db.prepare('SELECT x FROM t ORDER BY rowid').all() as { x: number }[]).map((r) => r.x);
    // better-sqlite3's savepoint statements without their (odd) savepoint name: `SAVEPOINT`, `RELEASE`, `ROLLBACK TO`.
    const control = () =>
      statements.filter((s) => !s.startsWith('INSERT') && !s.startsWith('SELECT') && !s.startsWith('CREATE')).map((s) => s.replace(/ `[^`]*`$/, ''));
    return { db, batch, calls, rows, control, statements };
  };

  test('a batch whose items all succeed is one transaction with no savepoint', () => {
    const { batch, calls, rows, control } = setupBatch();
    const outcomes = batch([1, 2, 3]);
    assert.deepEqual(outcomes, [1, 2, 3].map((x) => ({ ok: true, result: x * 10 })));
    assert.deepEqual(control(), ['BEGIN IMMEDIATE', 'COMMIT']);
    assert.deepEqual(calls, [1, 2, 3]);
    assert.deepEqual(rows(), [1, 2, 3]);
  });

  test('an item that throws: the attempt is rolled back and the batch written again, a savepoint per item', () => {
    const { batch, calls, rows, control } = setupBatch();
    const outcomes = batch([1, -2, 3]);
    assert.deepEqual(outcomes.map((o) => o.ok), [true, false, true]);
    assert.match(String((outcomes[1] as { error: Error }).error.message), /item -2 failed/);
    // The first attempt stopped at -2; the second ran every item in a savepoint of its own.
    assert.deepEqual(calls, [1, -2, 1, -2, 3]);
    assert.deepEqual(control(), [
      'BEGIN IMMEDIATE',
      'ROLLBACK',
      'BEGIN IMMEDIATE',
      'SAVEPOINT',
      'RELEASE',
      'SAVEPOINT',
      'ROLLBACK TO',
      'RELEASE',
      'SAVEPOINT',
      'RELEASE',
      'COMMIT',
    ]);
    assert.deepEqual(rows(), [1, 3], 'the failed item left nothing, the others committed once');
  });

  test('a finish that throws fails the batch once, with nothing committed and no second attempt', () => {
    const { batch, calls, rows, control } = setupBatch(() => {
      throw new Error('finish failed');
    });
    assert.throws(() => batch([1, 2]), /finish failed/);
    assert.deepEqual(calls, [1, 2]);
    assert.deepEqual(control(), ['BEGIN IMMEDIATE', 'ROLLBACK']);
    assert.deepEqual(rows(), []);
  });
});
