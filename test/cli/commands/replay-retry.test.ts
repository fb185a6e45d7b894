import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { runBuffered } from '../helpers.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { AGENTS, applyEnvironments, envYaml, waitForRun } from '../../runtime/routes/runs-helpers.ts';
import { GITHUB_UID, PR_OPENED, applyFactory, createSecret, deliverGithub } from '../../runtime/automations/helpers.ts';

test('factory delivery replay and factory run retry against a real runtime', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  await createSecret(rt);
  await applyFactory(rt, { review: { payload: { action: 'opened' } }, closed: { payload: { action: 'closed' } } });
  await applyEnvironments(rt, { bad: envYaml({ command: ['node', path.join(AGENTS, 'failing-agent.mjs')] }) }, 'other');
  const env = { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey };
  const cli = (...args: string[]) => runBuffered(args, env);

  const { deliveryId } = await deliverGithub(rt, PR_OPENED);
  const replay = await cli('delivery', 'replay', 'github', deliveryId);
  assert.equal(replay.code, 0, replay.err);
  assert.match(replay.out, /^RUN +AUTOMATION +STATE\nrun_\S+ +review +QUEUED/);
  const one = await cli('delivery', 'replay', GITHUB_UID, deliveryId, '--automation', 'review', '--json');
  assert.equal(one.code, 0, one.err);
  const runId = JSON.parse(one.out).runs[0].run_id as string;
  const show = await cli('delivery', 'show', 'github', deliveryId);
  assert.match(show.out, new RegExp(`${runId} +review +\\S+ +by admin`));
  const get = await cli('run', 'get', runId);
  assert.match(get.out, new RegExp(`replay of +delivery ${deliveryId} of ${GITHUB_UID}, by user admin`));

  const refused = await cli('delivery', 'replay', 'github', deliveryId, '--automation', 'closed');
  assert.equal(refused.code, 1);
  assert.match(refused.err, /does not match the filters of the automation "closed"/);
  assert.doesNotMatch(refused.err, /at .*\.ts:/);

  const failed = await cli('run', 'create', '--prompt', 'x', '--environment', 'bad', '--wait', '--poll-interval', '50');
  assert.equal(failed.code, 1);
  const failedId = /^(run_\S+) FAILED/.exec(failed.out)?.[1];
  assert.ok(failedId, failed.out);
  const retry = await cli('run', 'retry', failedId!);
  assert.equal(retry.code, 0, retry.err);
  const retried = retry.out.trim();
  assert.match(retried, /^run_[a-z2-7]{26}$/);
  const got = await cli('run', 'get', retried);
  assert.match(got.out, new RegExp(`retry of +${failedId}`));
  await waitForRun(rt, retried);

  const notFailed = await cli('run', 'retry', runId);
  await waitForRun(rt, runId);
  const again = await cli('run', 'retry', runId);
  assert.equal(again.code, 1);
  assert.match(again.err, /only a FAILED or ERROR run can be retried/);
  assert.ok(notFailed.code === 1);
});
