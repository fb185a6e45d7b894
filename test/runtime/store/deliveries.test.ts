import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import { openStore, type Store } from '../../../runtime/store/index.ts';
import type { AcceptItem, DeliveryFacts } from '../../../runtime/store/deliveries.ts';

/** Group commit in the store (SPEC 7.1 steps 8-9, 7.4): acceptBatch keeps one-by-one semantics. */

function setup(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'factory-deliveries-'));
  const clock = new FakeClock();
  const store = openStore({ path: join(dir, 'factory.db'), clock });
  t.after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
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

test('a batch commits every delivery in arrival order; the same identity twice is Accepted then Duplicate', (t) => {
  const { store } = setup(t);
  const results = store.deliveries.acceptBatch([item(store, 'a'), item(store, 'b'), item(store, 'a'), item(store, 'a')], 30);
  assert.deepEqual(
    results.map((r) => (r.ok ? r.result.outcome : 'error')),
    ['accepted', 'accepted', 'duplicate', 'duplicate'],
  );
  assert.deepEqual(outcomes(store, 'a'), ['accepted', 'duplicate', 'duplicate']);
  assert.equal(store.deliveries.get('wh_a', 'a')!.hasPayload, true);
  // Across batches too: a later batch sees the committed identity.
  const again = store.deliveries.acceptBatch([item(store, 'b')], 30);
  assert.equal(again[0].ok && again[0].result.outcome, 'duplicate');
  // Identities are per webhook.
  const other = store.deliveries.acceptBatch([{ ...item(store, 'a'), facts: facts(store, 'a', 'wh_b') }], 30);
  assert.equal(other[0].ok && other[0].result.outcome, 'accepted');
});

test('a throwing hook rolls back only its own delivery; its identity stays free', (t) => {
  const { store } = setup(t);
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
  assert.deepEqual(seen, ['x', 'y', 'z']);
  assert.deepEqual(outcomes(store, 'y'), ['accepted'], 'exactly one log entry for y: the failed one left none');
  assert.equal(store.deliveries.count('wh_a'), 3);
});

test('when SQLite ends the transaction, the batch fails as a whole and nothing of it is committed', (t) => {
  const { store } = setup(t);
  // A hook that ends the transaction under the batch (as a disk-full error would).
  const abort = () => store.db.exec('ROLLBACK');
  assert.throws(() => store.deliveries.acceptBatch([item(store, 'p'), item(store, 'q', { onAccepted: abort }), item(store, 'r')], 30));
  assert.equal(store.db.inTransaction, false);
  assert.equal(store.deliveries.count('wh_a'), 0);
  // The identities were not kept: the retries are Accepted.
  const retry = store.deliveries.acceptBatch([item(store, 'p'), item(store, 'q'), item(store, 'r')], 30);
  assert.deepEqual(retry.map((r) => r.ok && r.result.outcome), ['accepted', 'accepted', 'accepted']);
});

test('acceptOrDuplicate (one delivery, its own transaction) agrees with a batch of one', (t) => {
  const { store } = setup(t);
  assert.equal(store.deliveries.acceptOrDuplicate(facts(store, 'one'), Buffer.from('1'), 30).outcome, 'accepted');
  const [r] = store.deliveries.acceptBatch([item(store, 'one')], 30);
  assert.equal(r.ok && r.result.outcome, 'duplicate');
});
