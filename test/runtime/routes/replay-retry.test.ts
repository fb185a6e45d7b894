import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { compile } from '../../../cli/compiler/compile.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { AGENTS, applyEnvironments, createRun, envYaml, waitForRun } from './runs-helpers.ts';
import { FACTORY, GITHUB_UID, PR_OPENED, applyFactory, factoryFiles, createSecret, deliverGithub, deliveryRuns } from '../automations/helpers.ts';

/** Replay of a stored delivery and retry of a failed run, through the real API (docs/ingress.md#replay, docs/api.md#retry). */
describe('replay', () => {
  let rt: TestRuntime;

  before(async () => {
    rt = await startTestRuntime();
    await createSecret(rt);
    await applyFactory(rt, { review: { payload: { action: 'opened' } }, closed: { payload: { action: 'closed' } } });
  });
  after(() => rt.stop());

  const replay = (deliveryId: string, json?: unknown, init: { key?: string } = {}) =>
    rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries/${encodeURIComponent(deliveryId)}/replay`, { method: 'POST', ...(json !== undefined ? { json } : {}), ...init });

  it('starts new runs against the automations as they are now, recorded as replays with who asked, never a Duplicate', async () => {
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);
    const first = await deliveryRuns(rt, deliveryId);
    assert.deepEqual(first.map((r) => r.automation), ['review']);

    // The automations change: `closed` now also takes opened pull requests.
    await applyFactory(rt, { review: { payload: { action: 'opened' } }, closed: { payload: { action: ['closed', 'opened'] } } });
    const r = await replay(deliveryId);
    assert.equal(r.status, 201);
    const body = (await r.json()) as Record<string, any>;
    assert.deepEqual(body.runs.map((x: any) => x.automation).sort(), ['closed', 'review']);
    for (const run of body.runs) {
      assert.equal(run.source, 'WEBHOOK');
      assert.equal(run.delivery_id, deliveryId);
      assert.equal(run.replay_of.delivery_id, deliveryId);
      assert.equal(run.replay_of.webhook_uid, GITHUB_UID);
      assert.deepEqual(run.replay_of.by, { type: 'user', name: 'admin' });
      assert.equal(run.attachments[0].size, PR_OPENED.length);
      const done = await waitForRun(rt, run.run_id);
      assert.equal(done.state, 'SUCCEEDED', done.status_message);
    }
    // The delivery's entry shows the original run and the replays; the log has no new entry.
    const all = await deliveryRuns(rt, deliveryId);
    assert.equal(all.length, 3);
    assert.equal((all as any[]).filter((x) => x.replay).length, 2);
    const log = (await (await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries?limit=100`)).json()) as Record<string, any>;
    assert.equal(log.deliveries.filter((d: any) => d.delivery_id === deliveryId).length, 1);
    assert.ok(!log.deliveries.some((d: any) => d.outcome === 'duplicate'));
    // Replayed again: the same delivery id is still not a Duplicate.
    assert.equal((await replay(deliveryId)).status, 201);
  });

  it('{automation} replays to one automation, and says why when it cannot', async () => {
    const { deliveryId } = await deliverGithub(rt, PR_OPENED);
    const one = await replay(deliveryId, { automation: 'review' });
    assert.equal(one.status, 201);
    assert.deepEqual(((await one.json()) as any).runs.map((x: any) => x.automation), ['review']);

    await applyFactory(rt, { review: { payload: { action: 'opened' } }, closed: { payload: { action: 'closed' } }, off: { enabled: false } });
    const cases: [unknown, number, string, RegExp][] = [
      [{ automation: 'closed' }, 409, 'conflict', /does not match the filters of the automation "closed"/],
      [{ automation: 'off' }, 409, 'conflict', /"off" is disabled/],
      [{ automation: 'nope' }, 404, 'resource_not_found', /no automation "nope"/],
      [{ automation: 7 }, 400, 'invalid_request', /automation must be the name/],
      [{ other: 1 }, 400, 'invalid_request', /Unknown field "other"/],
    ];
    for (const [json, status, code, detail] of cases) {
      const res = await replay(deliveryId, json);
      assert.equal(res.status, status, JSON.stringify(json));
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const problem = (await res.json()) as any;
      assert.equal(problem.code, code, JSON.stringify(json));
      assert.match(problem.detail, detail);
    }
  });

  it('only an Accepted delivery with a stored payload can be replayed (409 saying why); unknown ones are 404', async () => {
    const { deliveryId } = await deliverGithub(rt, PR_OPENED);
    // The same id again is a Duplicate: its log entry cannot be replayed, the Accepted one can.
    const bad = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-GitHub-Event': 'pull_request', 'X-GitHub-Delivery': 'unsigned-1', 'X-Hub-Signature-256': 'sha256=00' },
      body: PR_OPENED,
    });
    assert.equal(bad.status, 401);
    const rejected = await replay('unsigned-1');
    assert.equal(rejected.status, 409);
    const problem = (await rejected.json()) as any;
    assert.equal(problem.code, 'conflict');
    assert.match(problem.detail, /was Rejected \(auth\); only an Accepted delivery can be replayed/);
    assert.equal((await replay('no-such-delivery')).status, 404);
    assert.equal((await rt.fetch(`/api/v1/webhooks/wh_aaaaaaaaaaaaaaaaaaaaaaaaaa/deliveries/${deliveryId}/replay`, { method: 'POST' })).status, 404);
  });

  it('needs manage for the webhook\'s factory; a key of another factory gets the unknown webhook 404', async () => {
    const { deliveryId } = await deliverGithub(rt, PR_OPENED);
    const mk = async (body: Record<string, unknown>) => {
      const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: { kind: 'personal', ...body } });
      const json = (await res.json()) as any;
      assert.equal(res.status, 201, JSON.stringify(json));
      return json.key as string;
    };
    const runsKey = await mk({ name: 'runs-only', scopes: ['runs'] });
    const otherKey = await mk({ name: 'other-factory', scopes: ['manage'], factories: ['elsewhere'] });
    const ownKey = await mk({ name: 'shop-manager', scopes: ['manage'], factories: [FACTORY] });
    assert.equal((await replay(deliveryId, undefined, { key: runsKey })).status, 403);
    const foreign = await replay(deliveryId, undefined, { key: otherKey });
    assert.equal(foreign.status, 404);
    const problem = (await foreign.json()) as any;
    assert.equal(problem.code, 'resource_not_found');
    assert.equal(problem.detail, `No webhook has the UID ${GITHUB_UID}.`);
    const own = await replay(deliveryId, undefined, { key: ownKey });
    assert.equal(own.status, 201);
    assert.deepEqual(((await own.json()) as any).runs[0].replay_of.by, { type: 'user', name: 'shop-manager' });
  });
});

describe('retry', () => {
  let rt: TestRuntime;

  before(async () => {
    rt = await startTestRuntime();
    await applyEnvironments(rt, {
      failing: envYaml({ command: [process.execPath, path.join(AGENTS, 'failing-agent.mjs')] }),
      ok: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }),
    });
  });
  after(() => rt.stop());

  it('a FAILED run is retried with the same input as a new run carrying retry_of', async () => {
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const { res, body } = await createRun(rt, {
      prompt: 'do the thing',
      title: 'a title',
      metadata: { ticket: 'T-1' },
      config: { environment_id: 'failing', model_id: 'm-1' },
      images: [{ data: png, mime_type: 'image/png' }],
    });
    assert.equal(res.status, 201);
    const failed = await waitForRun(rt, body.run_id);
    assert.equal(failed.state, 'FAILED');

    const retry = await rt.fetch(`/api/v1/agent/runs/${failed.run_id}/retry`, { method: 'POST' });
    assert.equal(retry.status, 201);
    const again = (await retry.json()) as Record<string, any>;
    assert.notEqual(again.run_id, failed.run_id);
    assert.equal(again.retry_of, failed.run_id);
    assert.equal(retry.headers.get('location'), `/api/v1/agent/runs/${again.run_id}`);
    for (const k of ['prompt', 'title', 'metadata', 'config', 'source', 'creator', 'attachments', 'agent_config']) assert.deepEqual(again[k], failed[k], k);
    assert.equal((await waitForRun(rt, again.run_id)).state, 'FAILED');
  });

  it('any other state is a 409 saying why; an unknown run is a 404; the scope is runs', async () => {
    const { body } = await createRun(rt, { prompt: 'fine', config: { environment_id: 'ok' } });
    const done = await waitForRun(rt, body.run_id);
    assert.equal(done.state, 'SUCCEEDED');
    const res = await rt.fetch(`/api/v1/agent/runs/${done.run_id}/retry`, { method: 'POST' });
    assert.equal(res.status, 409);
    const problem = (await res.json()) as any;
    assert.equal(problem.code, 'conflict');
    assert.match(problem.detail, /is SUCCEEDED; only a FAILED or ERROR run can be retried/);
    assert.equal((await rt.fetch('/api/v1/agent/runs/run_nope/retry', { method: 'POST' })).status, 404);
    const made = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'm', kind: 'personal', scopes: ['manage'] } });
    const key = ((await made.json()) as any).key as string;
    assert.equal(made.status, 201);
    assert.equal((await rt.fetch(`/api/v1/agent/runs/${done.run_id}/retry`, { method: 'POST', key })).status, 403);
  });
});

describe('a retried run of a delivery', () => {
  let rt: TestRuntime;

  before(async () => {
    rt = await startTestRuntime();
    rt.services.executor!.pause(); // the run is failed by hand below, before any agent could finish it
    await createSecret(rt);
    await applyFactory(rt, { review: { payload: { action: 'opened' } } });
  });
  after(() => rt.stop());

  it('lists under the delivery\'s log entry next to the run it retries', async () => {
    const { res, deliveryId } = await deliverGithub(rt, PR_OPENED);
    assert.equal(res.status, 202);
    const [original] = await deliveryRuns(rt, deliveryId);
    assert.equal(rt.store.runs.claimNext()?.run_id, original.run_id);
    rt.store.runs.finish(original.run_id, 'FAILED', { statusMessage: 'the agent exited with 1' });
    const retry = await rt.fetch(`/api/v1/agent/runs/${original.run_id}/retry`, { method: 'POST' });
    assert.equal(retry.status, 201);
    const again = (await retry.json()) as Record<string, any>;
    assert.equal(again.delivery_id, deliveryId);
    assert.deepEqual(
      (await deliveryRuns(rt, deliveryId)).map((r) => [r.run_id, r.state]),
      [
        [original.run_id, 'FAILED'],
        [again.run_id, 'QUEUED'],
      ],
    );
  });
});

describe('a retried run whose environment passed to another factory', () => {
  let rt: TestRuntime;
  before(async () => {
    rt = await startTestRuntime();
    rt.services.executor!.pause();
    await createSecret(rt);
    await applyFactory(rt, { review: { payload: { action: 'opened' } } });
  });
  after(() => rt.stop());

  it('is a 409 in the executor\'s words, not a run that fails at once', async () => {
    const { deliveryId } = await deliverGithub(rt, PR_OPENED);
    const [original] = await deliveryRuns(rt, deliveryId);
    assert.equal(rt.store.runs.claimNext()?.run_id, original.run_id);
    rt.store.runs.finish(original.run_id, 'ERROR', { statusMessage: 'the runtime stopped', errorCode: 'runtime_stopped', retryable: true });
    // The factory drops its automation and environment; another factory then defines "agent".
    const emptied = compile(factoryFiles({}).filter((f) => !f.path.startsWith('environments/')));
    assert.equal((await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot: emptied.snapshot } })).status, 200);
    await applyEnvironments(rt, { agent: envYaml({ command: ['true'] }) }, 'elsewhere');

    const retry = await rt.fetch(`/api/v1/agent/runs/${original.run_id}/retry`, { method: 'POST' });
    assert.equal(retry.status, 409);
    assert.equal(
      ((await retry.json()) as { detail: string }).detail,
      `The environment "agent" of run "${original.run_id}" now belongs to another factory, not to "${FACTORY}", so it cannot be retried.`,
    );
    assert.equal(rt.store.runs.list({ limit: 10 }).runs.length, 1);
  });
});

describe('logging', () => {
  it('the replay and retry paths are logged with the delivery id redacted, the ids kept', async () => {
    const { redactUrl } = await import('../../../runtime/log.ts');
    assert.equal(redactUrl(`/api/v1/webhooks/${GITHUB_UID}/deliveries/72d3162e-cc78-11e3/replay`), `/api/v1/webhooks/${GITHUB_UID}/deliveries/[REDACTED]/replay`);
    assert.equal(redactUrl('/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/retry'), '/api/v1/agent/runs/run_abcdefghijklmnopqrstuvwxyz/retry');
  });
});
