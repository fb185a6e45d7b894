import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { GITHUB_UID, PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns, type AutomationSpec } from '../automations/helpers.ts';
import { createHook, deliver, logOf, startIngressRuntime } from './helpers.ts';

/**
 * The ingress serves webhooks and matches automations from caches rebuilt once per definitions
 * generation (runtime/store/definitions.ts `generation`, docs/ingress.md#performance). Every
 * change must reach the very next delivery: apply (automation added, filter changed, disabled,
 * enabled, removed, webhook deleted), and the management API (disable, enable, rotate, delete).
 */
describe('what a delivery sees right after each change', () => {
  let rt: TestRuntime;
  before(async () => {
    rt = await startTestRuntime();
    // Runs stay QUEUED: this is about which runs a delivery creates, not about executing them.
    (rt.services.executor as { pause(): void }).pause();
    await createSecret(rt);
  });
  after(() => rt.stop());

  const started = async () => {
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);
    return (await deliveryRuns(rt, deliveryId)).map((r) => r.automation);
  };
  const apply = (automations: Record<string, AutomationSpec>, webhooks?: Record<string, string>) => applyFactory(rt, automations, webhooks);

  it('apply: automations added, filters changed, disabled, enabled and removed', async () => {
    await apply({ review: { payload: { action: 'opened' } } });
    assert.deepEqual(await started(), ['review']);
    await apply({ review: { payload: { action: 'closed' } }, triage: {} });
    assert.deepEqual(await started(), ['triage']);
    await apply({ review: { payload: { action: ['closed', 'opened'] } }, triage: { enabled: false } });
    assert.deepEqual(await started(), ['review']);
    await apply({ review: { payload: { action: 'closed' } }, triage: {} });
    assert.deepEqual(await started(), ['triage']);
    await apply({ review: { payload: { action: 'closed' } } });
    assert.deepEqual(await started(), []);
  });

  it('the management API: disable and enable take effect on the next request', async () => {
    await apply({ triage: {} });
    const disabled = await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/disable`, { method: 'POST' });
    assert.equal(disabled.status, 200);
    assert.equal((await deliverGithub(rt, PR_OPENED)).res.status, 404);
    const enabled = await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/enable`, { method: 'POST' });
    assert.equal(enabled.status, 200);
    assert.deepEqual(await started(), ['triage']);
  });

  it('apply: a deleted webhook answers 404 at once', async () => {
    await apply({ triage: {} }, {});
    assert.equal((await deliverGithub(rt, PR_OPENED)).res.status, 404);
  });

  it('API-managed webhooks: rotate and delete take effect on the next request', async () => {
    const hook = await createHook(rt, 'cache-api', { name: 'tok' });
    const send = (secret: string) => deliver(hook.url, '{}', { Authorization: `Bearer ${secret}` });
    assert.equal((await send(hook.secret!)).status, 202);
    const rotated = (await (await rt.fetch(`/api/v1/webhooks/${hook.uid}/rotate`, { method: 'POST', json: {} })).json()) as { secret: string };
    assert.equal((await send(hook.secret!)).status, 401);
    assert.equal((await send(rotated.secret)).status, 202);
    assert.equal((await rt.fetch(`/api/v1/webhooks/${hook.uid}`, { method: 'DELETE' })).status, 200);
    assert.equal((await send(rotated.secret)).status, 404);
  });
});

describe('the cap on Rejected entries', () => {
  let rt: TestRuntime;
  before(async () => {
    rt = await startIngressRuntime({ limits: { rejectedLogKeep: 5, failedAuthPerMinute: 1000, deliveriesPerMinute: 1000 } });
  });
  after(() => rt.stop());

  it('keeps the newest N Rejected entries per webhook; Accepted ones are not touched', async () => {
    const hook = await createHook(rt, 'capped', { name: 'flood' });
    const other = await createHook(rt, 'capped', { name: 'quiet' });
    const send = (url: string, secret: string, id: string) => deliver(url, `{"id":"${id}"}`, { Authorization: `Bearer ${secret}`, 'X-Service-Delivery-Id': id });
    for (let i = 0; i < 3; i++) assert.equal((await send(hook.url, hook.secret!, `ok-${i}`)).status, 202);
    // A flood of bad tokens, some of them concurrent (one group commit).
    for (let i = 0; i < 6; i++) assert.equal((await send(hook.url, 'wrong', `bad-${i}`)).status, 401);
    const burst = await Promise.all(Array.from({ length: 6 }, (_, i) => send(hook.url, 'wrong', `bad-${6 + i}`)));
    assert.deepEqual(burst.map((r) => r.status), Array(6).fill(401));
    assert.equal((await send(hook.url, hook.secret!, 'ok-3')).status, 202);
    for (let i = 0; i < 2; i++) assert.equal((await send(other.url, 'wrong', `q-${i}`)).status, 401);

    const log = await logOf(rt, hook.uid);
    const rejected = log.filter((e) => e.outcome_label === 'Rejected (auth)').map((e) => e.delivery_id);
    assert.equal(rejected.length, 5);
    // The same entries by their stable outcome code, not only by the label shown to people.
    assert.deepEqual(log.filter((e) => e.outcome === 'rejected_auth').map((e) => e.delivery_id), rejected);
    assert.deepEqual(log.filter((e) => e.outcome === 'accepted').map((e) => e.delivery_id), ['ok-3', 'ok-2', 'ok-1', 'ok-0']);
    // The newest five: all from the burst (whatever order its members were logged in), none older.
    const burstIds = Array.from({ length: 6 }, (_, i) => `bad-${6 + i}`);
    assert.ok(rejected.every((id) => burstIds.includes(id)), rejected.join(', '));
    assert.deepEqual(log.filter((e) => e.outcome_label === 'Accepted').map((e) => e.delivery_id), ['ok-3', 'ok-2', 'ok-1', 'ok-0']);
    assert.deepEqual((await logOf(rt, other.uid)).map((e) => e.delivery_id), ['q-1', 'q-0']);
  });
});
