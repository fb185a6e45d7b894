import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { sign } from '@octokit/webhooks-methods';
import { FakeClock } from '../../../runtime/clock.ts';
import { pruneDeliveryLog } from '../../../runtime/ingress/service.ts';
import type { TestRuntime } from '../helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime } from '../ingress/helpers.ts';

/** docs/ingress.md#webhook-lifecycle and #delivery-log through the management API and a real server. */

let rt: TestRuntime;
const clock = new FakeClock('2026-05-01T00:00:00.000Z');
const DAY = 86_400_000;

before(async () => {
  rt = await startIngressRuntime({ clock, limits: { deliveriesPerMinute: 100_000, failedAuthPerMinute: 100_000 } });
});
after(() => rt.stop());

const post = (path: string, json?: unknown) => rt.fetch(path, { method: 'POST', json });
const bearer = (s: string | undefined) => ({ Authorization: `Bearer ${s}` });
const code = async (res: Response) => ((await res.json()) as { code: string }).code;

describe('create', () => {
  it('generates token secrets (32 random bytes, base64url), shown once, stored as a team secret', async () => {
    const hook = await createHook(rt, 'life', { name: 'gen' });
    assert.match(hook.secret!, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(hook.body.webhook.secret_name, 'life-gen-secret');
    assert.equal(hook.body.webhook.managed_by, 'api');
    assert.equal(rt.store.defs.getFactory('life')!.managedBy, 'api');
    const shown = await rt.fetch(`/api/v1/webhooks/${hook.uid}`);
    assert.ok(!(await shown.text()).includes(hook.secret!));
  });

  it('generates a whsec_ secret for standard-webhooks that the official signer accepts', async () => {
    const hook = await createHook(rt, 'life', { name: 'stdwh', auth_mode: 'signature', signature_scheme: 'standard-webhooks' });
    assert.match(hook.secret!, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"type":"ping"}';
    const id = 'msg_1';
    const headers = new StandardWebhook(hook.secret!).sign(id, new Date(clock.now()), body);
    const res = await deliver(hook.url, body, { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(clock.now().getTime() / 1000)), 'webhook-signature': headers });
    assert.equal(res.status, 202);
    assert.deepEqual(await res.json(), { delivery_id: id });
  });

  it('creates other signature webhooks disabled until set-secret gives the provider secret', async () => {
    const hook = await createHook(rt, 'life', { name: 'gh', auth_mode: 'signature', signature_scheme: 'github' });
    assert.equal(hook.secret, undefined);
    assert.equal(hook.body.webhook.enabled, false);
    assert.match(hook.body.next_step, /set-secret/);
    const body = '{"zen":"x"}';
    assert.equal((await deliver(hook.url, body, { 'X-Hub-Signature-256': await sign('provider', body) })).status, 404);
    const set = await post(`/api/v1/webhooks/${hook.uid}/secret`, { secret: 'provider' });
    assert.equal(set.status, 200);
    assert.equal(((await set.json()) as any).webhook.enabled, true);
    assert.equal((await deliver(hook.url, body, { 'X-Hub-Signature-256': await sign('provider', body) })).status, 202);
  });

  it('refuses bad input, a duplicate name and the 21st webhook of a factory', async () => {
    assert.equal((await post('/api/v1/factories/life/webhooks', { name: 'Bad Name' })).status, 400);
    assert.equal((await post('/api/v1/factories/life/webhooks', { name: 'x', auth_mode: 'signature' })).status, 400);
    assert.equal((await post('/api/v1/factories/life/webhooks', { name: 'x', secret: 'argv-style' })).status, 400);
    const dup = await post('/api/v1/factories/life/webhooks', { name: 'gen' });
    assert.equal(dup.status, 409);
    for (let i = 0; i < 20; i++) await createHook(rt, 'many', { name: `h${i}` });
    const over = await post('/api/v1/factories/many/webhooks', { name: 'h20' });
    assert.equal(over.status, 409);
    assert.equal(await code(over), 'conflict');
  });
});

describe('enable, disable, delete, rotate', () => {
  it('disable is 404 at once, enable is 202 again, delete is 404 for good', async () => {
    const hook = await createHook(rt, 'life', { name: 'toggle' });
    assert.equal((await deliver(hook.url, '{"a":1}', bearer(hook.secret))).status, 202);
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/disable`)).status, 200);
    const disabled = await deliver(hook.url, '{"a":2}', bearer(hook.secret));
    assert.equal(disabled.status, 404);
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/enable`)).status, 200);
    assert.equal((await deliver(hook.url, '{"a":3}', bearer(hook.secret))).status, 202);
    assert.equal((await rt.fetch(`/api/v1/webhooks/${hook.uid}`, { method: 'DELETE' })).status, 200);
    const deleted = await deliver(hook.url, '{"a":4}', bearer(hook.secret));
    assert.equal(deleted.status, 404);
    const unknown = await deliver(hook.url.replace(/wh_.*/, 'wh_' + 'z'.repeat(26)), '{"a":4}', bearer(hook.secret));
    assert.deepEqual(await deleted.json(), { ...((await unknown.json()) as object), instance: `/webhooks/w/${hook.uid}` });
    // The log of a deleted webhook stays readable, without the disabled and deleted attempts.
    assert.deepEqual((await logOf(rt, hook.uid)).map((e) => e.outcome_label), ['Accepted', 'Accepted']);
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/enable`)).status, 404);
  });

  it('rotate shows a new secret once; the old one is 401 on the very next request', async () => {
    const hook = await createHook(rt, 'life', { name: 'rot', auth_mode: 'url_token' });
    const base = hook.url.replace(/\/\{token\}$/, '');
    assert.equal((await deliver(`${base}/${hook.secret}`, '{"r":1}')).status, 202);
    const res = await post(`/api/v1/webhooks/${hook.uid}/rotate`);
    assert.equal(res.status, 200);
    const rotated = (await res.json()) as any;
    assert.notEqual(rotated.secret, hook.secret);
    assert.equal(rotated.webhook.secret_version, 2);
    assert.equal((await deliver(`${base}/${hook.secret}`, '{"r":2}')).status, 401);
    assert.equal((await deliver(rotated.url, '{"r":3}')).status, 202);
  });

  it('a definitions-managed webhook refuses rotate, delete and set-secret with 409; enable re-binds the current secret version', async () => {
    rt.store.defs.createFactory('defs', 'definitions');
    rt.store.secrets.create('defs-secret', 'first');
    const w = rt.store.defs.insertWebhook({
      factory: 'defs', name: 'ci', authMode: 'token', secretName: 'defs-secret', secretVersion: 1, enabled: true,
      managedBy: 'definitions', sourceFile: 'webhooks/ci.yaml',
    });
    const url = `${rt.url}/webhooks/w/${w.uid}`;
    assert.equal((await deliver(url, '{"d":1}', bearer('first'))).status, 202);
    const rotate = await post(`/api/v1/webhooks/${w.uid}/rotate`);
    assert.equal(rotate.status, 409);
    const problem = (await rotate.json()) as { code: string; detail: string };
    assert.equal(problem.code, 'conflict');
    assert.match(problem.detail, /factory secret update/);
    assert.equal((await rt.fetch(`/api/v1/webhooks/${w.uid}`, { method: 'DELETE' })).status, 409);
    assert.equal((await post(`/api/v1/webhooks/${w.uid}/secret`, { secret: 'x' })).status, 409);
    assert.equal((await post('/api/v1/factories/defs/webhooks', { name: 'extra' })).status, 409);

    // `factory secret update` makes version 2; the webhook stays on version 1 until enabled again.
    rt.store.secrets.update('defs-secret', 'second');
    assert.equal((await deliver(url, '{"d":2}', bearer('first'))).status, 202);
    assert.equal((await post(`/api/v1/webhooks/${w.uid}/disable`)).status, 200);
    const enabled = await post(`/api/v1/webhooks/${w.uid}/enable`);
    assert.equal(((await enabled.json()) as any).webhook.secret_version, 2);
    assert.equal((await deliver(url, '{"d":3}', bearer('first'))).status, 401);
    assert.equal((await deliver(url, '{"d":4}', bearer('second'))).status, 202);
  });

  it('a key limited to another factory gets a 404 on that factory\'s webhooks, exactly as on unknown ones', async () => {
    const hook = await createHook(rt, 'life', { name: 'private' });
    const keyRes = await post('/api/v1/keys', { name: 'other', kind: 'agent', scopes: ['manage'], factories: ['elsewhere'] });
    assert.equal(keyRes.status, 201);
    const key = ((await keyRes.json()) as { key: string }).key;
    for (const [method, path] of [
      ['GET', `/api/v1/webhooks/${hook.uid}/deliveries`],
      ['POST', `/api/v1/webhooks/${hook.uid}/disable`],
      ['POST', `/api/v1/webhooks/${hook.uid}/rotate`],
      ['DELETE', `/api/v1/webhooks/${hook.uid}`],
    ]) {
      const res = await rt.fetch(path, { key, method });
      assert.equal(res.status, 404, `${method} ${path}`);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'resource_not_found');
      assert.equal(problem.detail, `No webhook has the UID ${hook.uid}.`);
      assert.ok(!JSON.stringify(problem).includes('life'), 'the answer does not name the factory');
    }
    // Nothing was changed by the refused calls: the webhook still takes deliveries with its secret.
    assert.equal((await deliver(hook.url, '{"still":"on"}', bearer(hook.secret))).status, 202);
    const unknown = await rt.fetch('/api/v1/webhooks/wh_unknownunknownunknown0/deliveries', { key });
    assert.equal(unknown.status, 404);
  });
});

describe('delivery log (7.7)', () => {
  it('lists newest first with label, size and time; payloads only for Accepted; no secrets', async () => {
    const hook = await createHook(rt, 'log', { name: 'shown' });
    await deliver(hook.url, '{"first":1}', bearer(hook.secret));
    await deliver(hook.url, '{"first":1}', bearer(hook.secret));
    await deliver(hook.url, '{"second"', bearer(hook.secret));
    await deliver(hook.url, '{"third":3}', bearer('nope-not-it'));
    const log = await logOf(rt, hook.uid);
    assert.deepEqual(log.map((e) => e.outcome_label), ['Rejected (auth)', 'Rejected (invalid JSON)', 'Duplicate', 'Accepted']);
    assert.deepEqual(log.map((e) => e.has_payload), [false, false, false, true]);
    assert.equal(log[3].size, 11);
    assert.match(log[3].received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const detail = await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries/${encodeURIComponent(log[3].delivery_id)}`);
    const shown = (await detail.json()) as any;
    assert.equal(shown.outcome_label, 'Accepted');
    assert.deepEqual(shown.payload, { first: 1 });
    const rejected = await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries/${log[0].delivery_id}`);
    assert.equal(((await rejected.json()) as any).payload, undefined);
    const everything = JSON.stringify(log) + rt.logs.text;
    assert.ok(!everything.includes(hook.secret!) && !everything.includes('nope-not-it'));
    const paged = (await (await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries?limit=3`)).json()) as any;
    assert.equal(paged.deliveries.length, 3);
    assert.equal(paged.page_info.has_next_page, true);
    const rest = (await (await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries?cursor=${paged.page_info.next_cursor}`)).json()) as any;
    assert.deepEqual(rest.deliveries.map((e: any) => e.outcome_label), ['Accepted']);
    assert.equal((await rt.fetch(`/api/v1/webhooks/${hook.uid}/deliveries?limit=0`)).status, 400);
  });

  it('keeps the newest 50 per webhook and everything from 7 days; remembers identities 30 days', async () => {
    const hook = await createHook(rt, 'log', { name: 'pruned' });
    const send = (id: string) => deliver(hook.url, `{"id":"${id}"}`, { ...bearer(hook.secret), 'X-Service-Delivery-Id': id });
    for (let i = 0; i < 60; i++) assert.equal((await send(`old-${i}`)).status, 202);
    clock.advance(8 * DAY);
    for (let i = 0; i < 10; i++) await send(`new-${i}`);
    pruneDeliveryLog(rt.store, clock, rt.config.limits);
    let log = await logOf(rt, hook.uid);
    assert.equal(log.length, 50);
    assert.equal(log[0].delivery_id, 'new-9');
    assert.equal(log[49].delivery_id, 'old-20');

    // Within 7 days nothing goes, even past 50.
    for (let i = 10; i < 70; i++) await send(`new-${i}`);
    pruneDeliveryLog(rt.store, clock, rt.config.limits);
    log = await logOf(rt, hook.uid);
    assert.equal(log.length, 70);
    assert.ok(log.every((e) => e.delivery_id.startsWith('new-')));

    // A replay after its entry and payload were pruned is still a Duplicate...
    await send('old-0');
    assert.equal((await logOf(rt, hook.uid, 1))[0].outcome_label, 'Duplicate');
    // ...until the identity is forgotten after 30 days.
    clock.advance(23 * DAY);
    pruneDeliveryLog(rt.store, clock, rt.config.limits);
    await send('old-1');
    assert.equal((await logOf(rt, hook.uid, 1))[0].outcome_label, 'Accepted');
  });
  it('a url_token secret takes only a value that can be the last segment of the URL, on every path that binds one', async () => {
    const hook = await createHook(rt, 'life', { name: 'utok', auth_mode: 'url_token' });
    const secretName = hook.body.webhook.secret_name as string;
    const base = hook.url.replace(/\/\{token\}$/, '');
    // A new value of its secret, with or without a grace: refused before anything is written.
    for (const body of [{ value: 'x y/z' }, { value: 'a'.repeat(31) }, { value: 'é'.repeat(40), grace_seconds: 60 }, { value: 'x y/z', grace_seconds: 0 }]) {
      const res = await rt.fetch(`/api/v1/secrets/${secretName}`, { method: 'PUT', json: body });
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(problem.code, 'invalid_request');
      assert.match(problem.detail, /cannot be a url_token, which a url_token webhook uses/);
    }
    assert.equal(rt.store.secrets.get(secretName)!.current_version, 1, 'no version was written');
    assert.equal((await deliver(`${base}/${hook.secret}`, '{"u":1}')).status, 202);
    const good = 'Az09-._~'.repeat(5);
    assert.equal((await rt.fetch(`/api/v1/secrets/${secretName}`, { method: 'PUT', json: { value: good, grace_seconds: 0 } })).status, 200);
    assert.equal((await deliver(`${base}/${good}`, '{"u":2}')).status, 202);

    // Binding an existing secret whose value is not one: 409, and no webhook.
    rt.store.secrets.create('plain-words', 'not a token at all');
    const made = await post('/api/v1/factories/life/webhooks', { name: 'utok2', auth_mode: 'url_token', secret_name: 'plain-words' });
    assert.equal(made.status, 409);
    assert.match(((await made.json()) as { detail: string }).detail, /"plain-words" cannot be a url_token, which the url_token webhook "utok2" uses/);
    const listed = (await (await rt.fetch('/api/v1/webhooks?factory=life')).json()) as { webhooks: { name: string }[] };
    assert.ok(!listed.webhooks.some((w) => w.name === 'utok2'));

    // A value that got in another way (written by an older release): enable refuses to bind it.
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/disable`)).status, 200);
    rt.store.secrets.update(secretName, 'short');
    const enable = await post(`/api/v1/webhooks/${hook.uid}/enable`);
    assert.equal(enable.status, 409);
    assert.equal(((await (await rt.fetch(`/api/v1/webhooks/${hook.uid}`)).json()) as { enabled: boolean }).enabled, false);
    assert.equal((await deliver(`${base}/short`, '{"u":3}')).status, 404);
  });
  it('a standard-webhooks secret must decode to a signing key, on every path that sets or binds one', async () => {
    const refused = async (res: Response, status: number, what: string) => {
      assert.equal(res.status, status, `${what}: ${await res.clone().text()}`);
      assert.match(((await res.json()) as { detail: string }).detail, /cannot verify the signatures of .*: it must be the base64 of the signing key/, what);
    };
    const sw = { auth_mode: 'signature', signature_scheme: 'standard-webhooks' };
    await refused(await post('/api/v1/factories/life/webhooks', { name: 'sw-plain', ...sw, secret: 'my plain secret!' }), 400, 'create with a value');
    rt.store.secrets.create('sw-words', 'not base64 at all!');
    await refused(await post('/api/v1/factories/life/webhooks', { name: 'sw-bound', ...sw, secret_name: 'sw-words' }), 409, 'create on an existing secret');
    const listed = (await (await rt.fetch('/api/v1/webhooks?factory=life')).json()) as { webhooks: { name: string }[] };
    assert.ok(!listed.webhooks.some((w) => w.name.startsWith('sw-')), 'no webhook was made');

    const hook = await createHook(rt, 'life', { name: 'sw-good', ...sw });
    const secretName = hook.body.webhook.secret_name as string;
    await refused(await post(`/api/v1/webhooks/${hook.uid}/secret`, { secret: 'whsec_not base64!' }), 400, 'set-secret');
    await refused(await post(`/api/v1/webhooks/${hook.uid}/rotate`, { secret: 'plain' }), 400, 'rotate with a value');
    await refused(await rt.fetch(`/api/v1/secrets/${secretName}`, { method: 'PUT', json: { value: 'plain words' } }), 400, 'a new value of its secret');
    assert.equal(rt.store.secrets.get(secretName)!.current_version, 1, 'no version was written');
    // A value that got in another way (written by an older release): enable refuses to bind it.
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/disable`)).status, 200);
    rt.store.secrets.update(secretName, 'plain');
    await refused(await post(`/api/v1/webhooks/${hook.uid}/enable`), 409, 'enable');
    // A real key is taken, with or without its prefix.
    const key = Buffer.alloc(32, 9).toString('base64');
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/secret`, { secret: key })).status, 200);
    assert.equal((await post(`/api/v1/webhooks/${hook.uid}/secret`, { secret: `whsec_${key}` })).status, 200);
  });
  it('a description is at most 2,000 characters, as in a definitions file', async () => {
    const long = await post('/api/v1/factories/life/webhooks', { name: 'wordy', description: 'x'.repeat(2001) });
    assert.equal(long.status, 400);
    assert.deepEqual(((await long.json()) as { errors: unknown[] }).errors, [{ pointer: '/description', message: 'must be at most 2000 characters' }]);
    const hook = await createHook(rt, 'life', { name: 'wordy', description: 'x'.repeat(2000) });
    assert.equal(hook.body.webhook.description.length, 2000);
  });
});
