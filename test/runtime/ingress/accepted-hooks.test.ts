import { it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime, type CreatedHook } from './helpers.ts';

/** The onAccepted hook point (pipeline step 9 of docs/ingress.md, docs/automations.md): inside the Accepted transaction. */

let rt: TestRuntime;
let hook: CreatedHook;
before(async () => {
  rt = await startIngressRuntime();
  hook = await createHook(rt, 'hooks', { name: 'h' });
});
after(() => rt.stop());

it('calls hooks once per Accepted delivery, inside its transaction; a throwing hook rolls it back', async () => {
  const state = rt.services.ingress!;
  const seen: string[] = [];
  state.onAccepted.push((webhook, delivery) => {
    assert.equal(webhook.uid, hook.uid);
    assert.equal(rt.store.db.inTransaction, true);
    seen.push(`${webhook.factory}/${webhook.name}:${delivery.deliveryId}:${delivery.payload.toString('utf8')}`);
  });
  const auth = { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': 'one' };
  assert.equal((await deliver(hook.url, '{"x":1}', auth)).status, 202);
  assert.equal((await deliver(hook.url, '{"x":1}', auth)).status, 202);
  assert.deepEqual(seen, ['hooks/h:one:{"x":1}']);

  state.onAccepted.push(() => {
    throw new Error('run creation failed');
  });
  const failed = await deliver(hook.url, '{"x":2}', { ...auth, 'X-Service-Delivery-Id': 'two' });
  assert.equal(failed.status, 500);
  state.onAccepted.pop();
  assert.equal(rt.store.deliveries.get(hook.uid, 'two'), undefined);
  // Nothing was kept, so the sender's retry is Accepted.
  assert.equal((await deliver(hook.url, '{"x":2}', { ...auth, 'X-Service-Delivery-Id': 'two' })).status, 202);
  assert.equal((await logOf(rt, hook.uid, 1))[0].outcome_label, 'Accepted');
});
