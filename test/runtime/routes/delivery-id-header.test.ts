import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { compile } from '../../../cli/compiler/compile.ts';
import { snapshotDigest } from '../../../runtime/definitions/checks.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf } from '../ingress/helpers.ts';

/**
 * A delivery id header's value is stored, listed and logged, so it may never be a header that
 * carries a credential: the management API refuses it (400), plan and apply refuse it in a
 * snapshot (400), and a webhook stored before the rule never gets such a value as its id.
 */

let rt: TestRuntime;
before(async () => {
  rt = await startTestRuntime();
});
after(() => rt.stop());

const CREDENTIALS = ['Authorization', 'authorization', 'Cookie', 'Proxy-Authorization', 'X-Hub-Signature-256', 'X-Gitlab-Token', 'Stripe-Signature', 'svix-timestamp', 'X-Api-Key'];

test('creating a webhook with a credential header as delivery_id_header is a 400 naming the field', async () => {
  for (const header of CREDENTIALS) {
    const res = await rt.fetch('/api/v1/factories/ids/webhooks', { method: 'POST', json: { name: 'leaky', delivery_id_header: header } });
    assert.equal(res.status, 400, header);
    const body = (await res.json()) as { code: string; errors: { pointer: string; message: string }[] };
    assert.equal(body.code, 'invalid_request');
    assert.deepEqual(body.errors.map((e) => e.pointer), ['/delivery_id_header'], header);
    assert.match(body.errors[0].message, /may carry a credential/);
  }
  const list = (await (await rt.fetch('/api/v1/webhooks?factory=ids')).json()) as { webhooks: unknown[] };
  assert.deepEqual(list.webhooks, [], 'nothing was created');
  const fine = await rt.fetch('/api/v1/factories/ids/webhooks', { method: 'POST', json: { name: 'fine', delivery_id_header: 'X-CI-Build-Id' } });
  assert.equal(fine.status, 201);
});

test('plan and apply refuse a snapshot whose webhook has a credential delivery id header', async () => {
  const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'defs-token', value: 'a-token-value-of-some-length-0123456789' } });
  assert.equal(secret.status, 201);
  const { snapshot } = compile([
    { path: 'factory.yaml', text: 'name: defs\n' },
    { path: 'webhooks/hook.yaml', text: 'secretName: defs-token\ndeliveryIdHeader: X-Event-Id\n' },
  ]);
  assert.ok(snapshot);
  // A snapshot the compiler would not build (an older CLI, a hand-made one): the runtime judges it.
  const bad = structuredClone(snapshot);
  bad.webhooks[0].deliveryIdHeader = 'Authorization';
  bad.digest = snapshotDigest(bad);
  for (const action of ['plan', 'apply']) {
    const res = await rt.fetch(`/api/v1/factories/defs/${action}`, { method: 'POST', json: { snapshot: bad } });
    assert.equal(res.status, 400, action);
    const body = (await res.json()) as { code: string; errors: { file: string; pointer: string; code: string }[] };
    assert.equal(body.code, 'invalid_request');
    assert.deepEqual(body.errors.map((e) => [e.file, e.pointer, e.code]), [['webhooks/hook.yaml', '/deliveryIdHeader', 'webhook.credential_delivery_id_header']]);
  }
  assert.equal((await (await rt.fetch('/api/v1/webhooks?factory=defs')).json() as { webhooks: unknown[] }).webhooks.length, 0);
  const good = await rt.fetch('/api/v1/factories/defs/apply', { method: 'POST', json: { snapshot } });
  assert.equal(good.status, 200, await good.clone().text());
});

test('a webhook stored before the rule: the credential header is never its delivery id', async () => {
  const hook = await createHook(rt, 'legacy', { name: 'old', auth_mode: 'token' });
  // As if created by an earlier version, which let this through.
  rt.store.defs.updateWebhook(hook.uid, { deliveryIdHeader: 'Authorization' });
  assert.equal(rt.store.defs.getWebhookByUid(hook.uid)!.deliveryIdHeader, 'Authorization');

  const token = hook.secret!;
  const ok = await deliver(hook.url, '{"n":1}', { Authorization: `Bearer ${token}` });
  assert.equal(ok.status, 202);
  const { delivery_id } = (await ok.json()) as { delivery_id: string };
  assert.match(delivery_id, /^sha256:[0-9a-f]{64}$/, 'the body hash, the next source of identity');

  const wrong = await deliver(hook.url, '{"n":2}', { Authorization: 'Bearer guessed-token-value' });
  assert.equal(wrong.status, 401);

  // The sender's own id header still works as the id when sent.
  const withId = await deliver(hook.url, '{"n":3}', { Authorization: `Bearer ${token}`, 'X-Service-Delivery-Id': 'evt-3' });
  assert.equal(((await withId.json()) as { delivery_id: string }).delivery_id, 'evt-3');

  const log = await logOf(rt, hook.uid);
  const everything = JSON.stringify(log) + rt.logs.text;
  assert.equal(log.length, 3);
  assert.ok(!everything.includes(token), 'the token is in the delivery log or a log line');
  assert.ok(!everything.includes('guessed-token-value'), 'a refused credential is in the delivery log or a log line');
  assert.ok(!everything.includes('Bearer'), JSON.stringify(log.map((e) => e.delivery_id)));
});

test('an id sent as UTF-8 is the id the sender wrote: answered, listed and looked up as such', async () => {
  const hook = await createHook(rt, 'intl', { name: 'orders', auth_mode: 'token' });
  const id = 'commande-é-42';
  // On the wire, a header carries the id's UTF-8 bytes; a header string is one character per byte.
  const res = await deliver(hook.url, '{"n":1}', { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': Buffer.from(id, 'utf8').toString('latin1') });
  assert.equal(res.status, 202);
  assert.equal(((await res.json()) as { delivery_id: string }).delivery_id, id);
  assert.equal((await logOf(rt, hook.uid, 1))[0].delivery_id, id);
  const one = await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries/${encodeURIComponent(id)}`);
  assert.equal(one.status, 200, await one.clone().text());
});
