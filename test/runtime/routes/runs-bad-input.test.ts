import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml } from './runs-helpers.ts';

const RUN_TABLES = ['runs', 'run_events', 'run_attachments', 'run_idempotency', 'run_process_groups'];

/** Row counts of every run table, read straight from the store's database. */
function runTables(rt: TestRuntime): Record<string, number> {
  return Object.fromEntries(RUN_TABLES.map((t) => [t, (rt.store.db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get() as { n: number }).n]));
}

async function problem(res: Response, status: number, code: string, detail: RegExp) {
  assert.equal(res.status, status, `${code}: ${status}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = (await res.json()) as { code: string; detail: string; status: number; errors?: { pointer: string }[] };
  assert.deepEqual([body.status, body.code], [status, code]);
  assert.match(body.detail, detail);
  return body;
}

test('each bad input is a 4xx problem whose detail names the cause; no run table gains a row, not even the Idempotency-Key', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  await applyEnvironments(rt, { ok: envYaml({ command: ['true'] }) });
  const before = runTables(rt);
  assert.deepEqual(Object.values(before), [0, 0, 0, 0, 0]);

  // Every create below carries the same Idempotency-Key: a refused request must not claim it.
  const headers = { 'Content-Type': 'application/json', 'Idempotency-Key': 'retry-me' };
  const post = (body: string, key?: string) => rt.fetch('/api/v1/agent/runs', { method: 'POST', headers, body, ...(key ? { key } : {}) });

  let p = await problem(await post(JSON.stringify({ config: { environment_id: 'ok' } })), 400, 'invalid_request', /prompt is required/);
  assert.deepEqual(p.errors?.map((e) => e.pointer), ['/prompt']);
  p = await problem(await post(JSON.stringify({ prompt: 'x', config: { environment_id: 'nope' } })), 400, 'invalid_request', /environment "nope"/);
  p = await problem(await post(JSON.stringify({ prompt: 7, config: { environment_id: 7 } })), 400, 'invalid_request', /prompt must be a string, got number/);
  assert.deepEqual(p.errors?.map((e) => e.pointer), ['/prompt', '/config/environment_id']);
  await problem(await post(JSON.stringify({ prompt: 'x'.repeat(17 * 1024 * 1024), config: { environment_id: 'ok' } })), 413, 'payload_too_large', /larger than 16777216 bytes/);
  await problem(await post('{"prompt": "x", '), 400, 'invalid_json', /not valid JSON/);
  await problem(await post('prompt=x'), 400, 'invalid_json', /not valid JSON/);

  for (const [method, suffix] of [['GET', ''], ['GET', '/transcript'], ['POST', '/cancel']]) {
    await problem(await rt.fetch(`/api/v1/agent/runs/run_doesnotexist${suffix}`, { method }), 404, 'resource_not_found', /"run_doesnotexist"/);
  }

  const { id, raw } = rt.store.keys.create({ name: 'gone', kind: 'personal', scopes: ['runs'] });
  rt.store.keys.revoke(id);
  await problem(await post(JSON.stringify({ prompt: 'x', config: { environment_id: 'ok' } }), raw), 401, 'authentication_required', /revoked/);
  await problem(await rt.fetch('/api/v1/agent/runs', { key: raw }), 401, 'authentication_required', /revoked/);

  assert.deepEqual(runTables(rt), before);

  // The key was never recorded: the first valid request with it creates a run (201, not 200 or 409).
  const ok = await createRun(rt, { prompt: 'now valid', config: { environment_id: 'ok' } }, { headers: { 'Idempotency-Key': 'retry-me' } });
  assert.equal(ok.res.status, 201);
  assert.equal(runTables(rt).runs, 1);
  assert.equal(runTables(rt).run_idempotency, 1);
});

test('an unknown id or name is quoted back in a 404 cut to a bounded length, on every route that says it', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const long = 'x'.repeat(5000);
  const cut = 'x'.repeat(199) + '…';
  const hook = (await (await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name: 'hook' } })).json()) as { webhook: { uid: string } };
  const uid = hook.webhook.uid;
  const cases: [string, string, string][] = [
    ['GET', `/api/v1/agent/runs/run_${long}`, `No run has the id "run_${'x'.repeat(195)}…".`],
    ['GET', `/api/v1/agent/runs/${long}/transcript`, `No run has the id "${cut}".`],
    ['GET', `/api/v1/secrets/${long}`, `No secret is named "${cut}".`],
    ['POST', `/api/v1/keys/${long}/revoke`, `No API key has the id "${cut}".`],
    ['GET', `/api/v1/webhooks/${long}`, `No webhook has the UID ${cut}.`],
    ['GET', `/api/v1/webhooks/${uid}/deliveries/${long}`, `The webhook ${uid} has no delivery ${cut} in its log.`],
    ['GET', `/api/v1/agent/schedules/${long}`, `schedule ${cut} does not exist; list them with GET /api/v1/agent/schedules`],
    ['GET', `/api/v1/automations/shop/${long}`, `The factory "shop" has no automation "${cut}".`],
    ['GET', `/dashboard/${long}`, `The dashboard has no file "${cut}".`],
  ];
  for (const [method, path, detail] of cases) {
    const res = await rt.fetch(path, { method });
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 404, path.slice(0, 60));
    assert.equal(body.detail, detail, path.slice(0, 60));
  }
});
