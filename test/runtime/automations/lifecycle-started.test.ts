import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { waitForRun } from '../routes/runs-helpers.ts';
import { GITHUB_UID, OTHER_UID, PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns, webhookRuns, type AutomationSpec } from './helpers.ts';

/**
 * Issue 6: "runs already started are unaffected" when an automation is disabled, its file is
 * removed, or its webhook is deleted (each re-applied). The executor is held while the changes
 * are applied, so the runs the earlier deliveries created have not even begun when their
 * automation or webhook goes away; released, every one of them still runs to SUCCEEDED, while
 * the same delivery sent afterwards starts nothing of what was switched off.
 */

let rt: TestRuntime;
const hooks = { github: GITHUB_UID, other: OTHER_UID };
const automations: Record<string, AutomationSpec> = {
  review: { payload: { action: 'opened' } },
  triage: {},
  elsewhere: { uids: [OTHER_UID] },
};
const executor = () => rt.services.executor as { pause(): void; resume(): void };

before(async () => {
  rt = await startTestRuntime();
  await createSecret(rt);
  await applyFactory(rt, automations, hooks);
});
after(() => rt.stop());

it('runs created before their automation is disabled or removed, or their webhook deleted, still run to SUCCEEDED', async () => {
  executor().pause();
  const first = await deliverGithub(rt, PR_OPENED);
  const second = await deliverGithub(rt, PR_OPENED, { uid: OTHER_UID });
  assert.equal(first.res.status, 202);
  assert.equal(second.res.status, 202);
  const started = [...(await deliveryRuns(rt, first.deliveryId)), ...(await deliveryRuns(rt, second.deliveryId, OTHER_UID))];
  assert.deepEqual(started.map((r) => r.automation).sort(), ['elsewhere', 'review', 'triage']);
  assert.ok(started.every((r) => r.state === 'QUEUED'), JSON.stringify(started));

  // review disabled, triage's file removed, and the other webhook (elsewhere's only one) deleted.
  const { triage: _removed, ...rest } = automations;
  await applyFactory(rt, { ...rest, review: { ...automations.review, enabled: false } }, { github: GITHUB_UID });

  // New deliveries start nothing of that, at once (the executor is still held).
  const before = (await webhookRuns(rt)).length;
  const after = await deliverGithub(rt, PR_OPENED);
  assert.equal(after.res.status, 202);
  assert.deepEqual(await deliveryRuns(rt, after.deliveryId), []);
  assert.equal((await deliverGithub(rt, PR_OPENED, { uid: OTHER_UID })).res.status, 404);
  assert.equal((await webhookRuns(rt)).length, before);

  // The runs created before the change were neither cancelled nor dropped: released, they run.
  executor().resume();
  for (const r of started) {
    const run = await waitForRun(rt, r.run_id);
    assert.equal(run.state, 'SUCCEEDED', `${r.automation}: ${run.status_message}`);
    assert.equal(run.automation, r.automation);
  }
});
