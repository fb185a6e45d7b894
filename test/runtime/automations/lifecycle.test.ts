import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { waitForRun } from '../routes/runs-helpers.ts';
import { FACTORY, GITHUB_UID, OTHER_UID, PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns, type AutomationSpec } from './helpers.ts';

/**
 * docs/ingress.md#webhook-lifecycle and docs/automations.md: disabling an automation, removing its
 * file, or deleting its webhook, each re-applied, stops new runs at once; runs already started are
 * unaffected. Automations whose webhook is deleted stay listed, as silent.
 */
describe('automation lifecycle', () => {
  let rt: TestRuntime;
  const hooks = { github: GITHUB_UID, other: OTHER_UID };
  const automations: Record<string, AutomationSpec> = {
    review: { payload: { action: 'opened' } },
    triage: {},
    both: { uids: [GITHUB_UID, OTHER_UID] },
  };
  const automationsOf = async () =>
    ((await (await rt.fetch(`/api/v1/automations?factory=${FACTORY}`)).json()) as { automations: Record<string, any>[] }).automations;
  const startedBy = async (uid = GITHUB_UID) => {
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED, { uid });
    assert.equal(res.status, 202);
    return deliveryRuns(rt, deliveryId, uid);
  };

  before(async () => {
    rt = await startTestRuntime();
    await createSecret(rt);
    await applyFactory(rt, automations, hooks);
  });
  after(() => rt.stop());

  it('starts runs of every matching automation to begin with', async () => {
    const runs = await startedBy();
    assert.deepEqual(runs.map((r) => r.automation), ['both', 'review', 'triage']);
    for (const r of runs) assert.equal((await waitForRun(rt, r.run_id)).state, 'SUCCEEDED');
  });

  it('enabled: false re-applied stops new runs at once; a run already started finishes', async () => {
    const earlier = await startedBy();
    await applyFactory(rt, { ...automations, review: { ...automations.review, enabled: false } }, hooks);
    assert.deepEqual((await startedBy()).map((r) => r.automation), ['both', 'triage']);
    const review = earlier.find((r) => r.automation === 'review')!;
    const run = await waitForRun(rt, review.run_id);
    assert.equal(run.state, 'SUCCEEDED');
    assert.equal(run.automation, 'review');
    for (const r of earlier) await waitForRun(rt, r.run_id);
    const listed = (await automationsOf()).find((a) => a.name === 'review')!;
    assert.equal(listed.enabled, false);
    assert.equal(listed.silent, false);
    // Enabled again: it fires again.
    await applyFactory(rt, automations, hooks);
    assert.deepEqual((await startedBy()).map((r) => r.automation), ['both', 'review', 'triage']);
  });

  it('removing the file and re-applying stops new runs at once', async () => {
    const earlier = await startedBy();
    const { triage: _gone, ...rest } = automations;
    await applyFactory(rt, rest, hooks);
    assert.deepEqual((await startedBy()).map((r) => r.automation), ['both', 'review']);
    assert.deepEqual((await automationsOf()).map((a) => a.name), ['both', 'review']);
    for (const r of earlier) assert.equal((await waitForRun(rt, r.run_id)).state, 'SUCCEEDED');
  });

  it('deleting the webhook (its file removed, re-applied) stops it at once; its automations are listed as silent', async () => {
    const earlier = await startedBy();
    await applyFactory(rt, automations, { other: OTHER_UID });
    const res = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.res.status, 404);
    // `both` still listens to the other webhook, so it is not silent and still fires there.
    assert.deepEqual((await startedBy(OTHER_UID)).map((r) => r.automation), ['both']);
    const listed = new Map((await automationsOf()).map((a) => [a.name, a]));
    assert.equal(listed.get('review')!.silent, true);
    assert.match(listed.get('review')!.silent_reason, new RegExp(`deleted webhook ${GITHUB_UID}`));
    assert.deepEqual(listed.get('review')!.triggers[0], { webhook_uid: GITHUB_UID, webhook_name: 'github', webhook_state: 'deleted', payload: { action: 'opened' } });
    assert.equal(listed.get('triage')!.silent, true);
    assert.equal(listed.get('both')!.silent, false);
    assert.deepEqual(listed.get('both')!.triggers.map((t: { webhook_state: string }) => t.webhook_state), ['deleted', 'enabled']);
    for (const r of earlier) assert.equal((await waitForRun(rt, r.run_id)).state, 'SUCCEEDED');
  });

  it('an automation whose only webhook is unknown is silent too', async () => {
    await applyFactory(rt, { ...automations, orphan: { uids: ['wh_unknownunknownunknownunkno'] } }, { other: OTHER_UID });
    const orphan = (await automationsOf()).find((a) => a.name === 'orphan')!;
    assert.equal(orphan.silent, true);
    assert.match(orphan.silent_reason, /unknown webhook wh_unknownunknownunknownunkno/);
    const one = (await (await rt.fetch(`/api/v1/automations/${FACTORY}/orphan`)).json()) as Record<string, any>;
    assert.deepEqual(one, orphan);
    assert.equal((await rt.fetch(`/api/v1/automations/${FACTORY}/nope`)).status, 404);
  });

  it('a manage key limited to another factory sees none of these automations', async () => {
    const created = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'elsewhere', kind: 'personal', scopes: ['manage'], factories: ['elsewhere'] } });
    const { key } = (await created.json()) as { key: string };
    const list = (await (await rt.fetch('/api/v1/automations', { key })).json()) as { automations: unknown[] };
    assert.deepEqual(list.automations, []);
    // As if the factory had no such automation (test/runtime/routes/foreign-factory.test.ts).
    assert.equal((await rt.fetch(`/api/v1/automations/${FACTORY}/review`, { key })).status, 404);
    const test = await rt.fetch(`/api/v1/automations/${FACTORY}/review/test`, { key, method: 'POST', json: { delivery_id: 'x' } });
    assert.equal(test.status, 404);
    assert.equal(((await test.json()) as { code: string }).code, 'resource_not_found');
  });
});
