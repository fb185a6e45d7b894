import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook } from '../ingress/helpers.ts';
import { applyEnvironments, createRun, envYaml } from '../routes/runs-helpers.ts';

/**
 * docs/api.md: a route that takes no body refuses one that is not empty or `{}`, before it changes
 * anything; and a JSON body whose values could not be stored as sent (a number beyond a double, an
 * unpaired surrogate escape) is refused instead of being stored changed.
 */

async function pausedRuntime(t: { after: (fn: () => Promise<void>) => void }): Promise<TestRuntime> {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  await applyEnvironments(rt, { ok: envYaml({ command: ['true'] }) });
  return rt;
}

const BAD_BODIES: [string, number, string][] = [
  ['{not json', 400, 'invalid_json'],
  ['[1]', 400, 'invalid_request'],
  ['{"force":true}', 400, 'invalid_request'],
];

/** Sends each bad body to `method path` and checks the problem; then `unchanged()` must still hold. */
async function refusesBodies(rt: TestRuntime, method: string, path: string, unchanged: () => void | Promise<void>) {
  for (const [body, status, code] of BAD_BODIES) {
    const res = await rt.fetch(path, { method, headers: { 'Content-Type': 'application/json' }, body });
    const problem = (await res.json()) as { code: string; detail: string };
    assert.equal(res.status, status, `${method} ${path} with ${body}`);
    assert.equal(problem.code, code, `${method} ${path} with ${body}`);
    if (code === 'invalid_request') assert.equal(problem.detail, 'This request takes no body; send none, or an empty JSON object.');
    await unchanged();
  }
}

test('routes that take no body refuse any other than none or {}, and change nothing', async (t) => {
  const rt = await pausedRuntime(t);
  const state = (id: string) => rt.store.runs.get(id)!.state;
  const { body: run } = await createRun(rt, { prompt: 'Say hi', config: { environment_id: 'ok' } });
  await refusesBodies(rt, 'POST', `/api/v1/agent/runs/${run.run_id}/cancel`, () => assert.equal(state(run.run_id), 'QUEUED'));
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${run.run_id}/cancel`, { method: 'POST', json: {} })).status, 200);
  assert.equal(state(run.run_id), 'CANCELLED');

  const runs = () => rt.store.runs.list({ limit: 100 }).runs.length;
  await refusesBodies(rt, 'POST', `/api/v1/agent/runs/${run.run_id}/retry`, () => assert.equal(runs(), 1));
  // Without a body the route gets as far as judging the run (a cancelled run is not retried).
  const retried = await rt.fetch(`/api/v1/agent/runs/${run.run_id}/retry`, { method: 'POST' });
  assert.equal(((await retried.json()) as { code: string }).code, 'conflict');

  const hook = await createHook(rt, 'api-made', { name: 'hook' });
  const enabled = () => rt.store.defs.getWebhookByUid(hook.uid)!.enabled;
  await refusesBodies(rt, 'POST', `/api/v1/webhooks/${hook.uid}/disable`, () => assert.equal(enabled(), true));
  assert.equal((await rt.fetch(`/api/v1/webhooks/${hook.uid}/disable`, { method: 'POST', json: {} })).status, 200);
  await refusesBodies(rt, 'POST', `/api/v1/webhooks/${hook.uid}/enable`, () => assert.equal(enabled(), false));
  await refusesBodies(rt, 'DELETE', `/api/v1/webhooks/${hook.uid}`, () => assert.equal(rt.store.defs.getWebhookByUid(hook.uid)!.deletedAt, null));

  const key = (await (await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'k', kind: 'agent', scopes: ['runs'] } })).json()) as { id: string; key: string };
  await refusesBodies(rt, 'POST', `/api/v1/keys/${key.id}/revoke`, async () => assert.equal((await rt.fetch('/api/v1/agent/runs', { key: key.key })).status, 200));
  assert.equal((await rt.fetch(`/api/v1/keys/${key.id}/revoke`, { method: 'POST' })).status, 200);

  assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'doomed', value: 'v' } })).status, 201);
  await refusesBodies(rt, 'DELETE', '/api/v1/secrets/doomed', () => assert.ok(rt.store.secrets.get('doomed')));
});

test('a body with a value JSON cannot keep as sent is refused, not stored changed', async (t) => {
  const rt = await pausedRuntime(t);
  const cases: [string, string][] = [
    ['{"prompt":"x","config":{"environment_id":"ok"},"metadata":{"a":1e400}}', 'a number too large to represent at /metadata/a'],
    ['{"prompt":"x","config":{"environment_id":"ok"},"title":"\\ud800"}', 'a string with an unpaired UTF-16 surrogate escape at /title'],
    ['{"prompt":"x","config":{"environment_id":"ok"},"metadata":{"\\udc00":1}}', 'a key with an unpaired UTF-16 surrogate escape in /metadata'],
  ];
  for (const [body, what] of cases) {
    const res = await rt.fetch('/api/v1/agent/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const problem = (await res.json()) as { code: string; detail: string };
    assert.equal(res.status, 400, body);
    assert.deepEqual([problem.code, problem.detail], ['invalid_json', `The request body has ${what}, which would not be stored as sent.`]);
  }
  const keyName = await rt.fetch('/api/v1/keys', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"name":"\\ud83d","kind":"agent","scopes":["runs"]}' });
  assert.equal(keyName.status, 400);
  assert.equal(rt.store.runs.list({ limit: 10 }).runs.length, 0, 'nothing was created');
  // A surrogate pair is a character like any other, escaped or not.
  const { res, body } = await createRun(rt, { prompt: 'x', config: { environment_id: 'ok' }, title: 'ship it \ud83d\ude80', metadata: { big: 1e300 } });
  assert.equal(res.status, 201);
  assert.equal(body.title, 'ship it 🚀');
});

test('a body that is not JSON is refused with what is wrong and where, never with its own text', async (t) => {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  const cases: [string, RegExp][] = [
    ['LEAK_secret_value', /^The request body is not valid JSON: an unexpected character\.$/],
    ['{"value": LEAK_unquoted_secret}', /^The request body is not valid JSON: an unexpected character\.$/],
    ['{"value": "LEAK_x"', /^The request body is not valid JSON: Expected ',' or '}' after property value at character 19\.$/],
    ['{"value": "LEAK_x"} LEAK_tail', /^The request body is not valid JSON: Unexpected non-whitespace character after JSON at character 21\.$/],
  ];
  for (const [body, detail] of cases) {
    const res = await rt.fetch('/api/v1/secrets/some-secret', { method: 'PUT', body, headers: { 'Content-Type': 'application/json' } });
    const text = await res.text();
    assert.equal(res.status, 400, text);
    const problem = JSON.parse(text) as { code: string; detail: string };
    assert.equal(problem.code, 'invalid_json');
    assert.match(problem.detail, detail);
    assert.ok(!text.includes('LEAK'), text);
  }
  assert.ok(!rt.logs.text.includes('LEAK'));
});
