import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml } from './runs-helpers.ts';

async function pausedRuntime(t: { after: (fn: () => Promise<void>) => void }): Promise<TestRuntime> {
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  rt.services.executor!.pause();
  await applyEnvironments(rt, { ok: envYaml({ command: ['true'] }), other: envYaml({ command: ['true'] }) });
  return rt;
}

const count = (rt: TestRuntime) => rt.store.runs.list({ limit: 100 }).runs.length;

async function problem(res: Response, status: number, code: string) {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  const body = (await res.json()) as { code: string; detail: string; errors?: { pointer: string; message: string }[] };
  assert.equal(body.code, code);
  assert.ok(body.detail.length > 0);
  return body;
}

test('bad input is a 4xx problem naming the cause, and nothing is written', async (t) => {
  const rt = await pausedRuntime(t);
  const post = (body: string, init: { key?: string | null } = {}) =>
    rt.fetch('/api/v1/agent/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, ...init });

  let p = await problem(await post(JSON.stringify({ config: { environment_id: 'ok' } })), 400, 'invalid_request');
  assert.deepEqual(p.errors?.map((e) => e.pointer), ['/prompt']);

  p = await problem(await post(JSON.stringify({ prompt: 'x', config: { environment_id: 'nope' } })), 400, 'invalid_request');
  assert.match(p.detail, /"nope"/);
  assert.deepEqual(p.errors?.map((e) => e.pointer), ['/config/environment_id']);

  p = await problem(await post(JSON.stringify({ prompt: 7, config: 'ok', title: 5, metadata: [1], extra: true })), 400, 'invalid_request');
  assert.deepEqual(p.errors?.map((e) => e.pointer).sort(), ['/config', '/extra', '/metadata', '/prompt', '/title']);

  await problem(await post(JSON.stringify({ prompt: 'x'.repeat(17 * 1024 * 1024), config: { environment_id: 'ok' } })), 413, 'payload_too_large');
  await problem(await post('{"prompt": '), 400, 'invalid_json');
  await problem(await post('[]'), 400, 'invalid_request');
  await problem(await rt.fetch('/api/v1/agent/runs/run_doesnotexist'), 404, 'resource_not_found');
  await problem(await rt.fetch('/api/v1/agent/runs/run_doesnotexist/transcript'), 404, 'resource_not_found');

  const { id, raw } = rt.store.keys.create({ name: 'gone', kind: 'personal', scopes: ['runs'] });
  rt.store.keys.revoke(id);
  await problem(await post(JSON.stringify({ prompt: 'x', config: { environment_id: 'ok' } }), { key: raw }), 401, 'authentication_required');
  await problem(await post(JSON.stringify({ prompt: 'x', config: { environment_id: 'ok' } }), { key: null }), 401, 'authentication_required');

  assert.equal(count(rt), 0);
});

test('list query values are checked', async (t) => {
  const rt = await pausedRuntime(t);
  for (const q of ['limit=0', 'limit=101', 'limit=x', 'state=DONE', 'source=EMAIL', 'created_after=yesterday', 'cursor=garbage', 'environment_id=Bad_Name', 'sort_by=title', 'sort_order=up', 'updated_after=soon', 'artifact_type=VIDEO', 'colour=red', 'created_after=2026-02-30T00:00:00Z', 'created_before=2026-11-31T00:00:00Z', 'updated_after=2026-01-01T24:00:00Z', 'created_after=2026-13-01T00:00:00Z', 'created_after=2026-01-01T00:00:00%2B24:00']) {
    const p = await problem(await rt.fetch(`/api/v1/agent/runs?${q}`), 400, 'invalid_request');
    assert.equal(p.errors?.[0].pointer, q.split('=')[0], q);
  }
  const ok = await rt.fetch('/api/v1/agent/runs?state=QUEUED&state=FAILED,ERROR&limit=100&source=API&created_after=2020-01-01T00:00:00Z');
  assert.equal(ok.status, 200);
  // Days that exist, a leap day among them, and offsets.
  for (const q of ['created_after=2024-02-29T23:59:59.5Z', 'created_before=2026-12-31T00:00:00%2B14:00', 'updated_after=2026-04-30T12:00:00-05:30']) {
    assert.equal((await rt.fetch(`/api/v1/agent/runs?${q}`)).status, 200, q);
  }
});

test('45 runs come back in three pages of limit=20, newest first, without gaps, while more are created', async (t) => {
  const rt = await pausedRuntime(t);
  const ids: string[] = [];
  for (let i = 0; i < 45; i++) ids.push((await createRun(rt, { prompt: `run ${i}`, config: { environment_id: i % 2 ? 'ok' : 'other' } })).body.run_id);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await rt.fetch(`/api/v1/agent/runs?limit=20${cursor ? `&cursor=${cursor}` : ''}`);
    const page = (await res.json()) as { runs: { run_id: string }[]; page_info: { has_next_page: boolean; next_cursor: string | null } };
    seen.push(...page.runs.map((r) => r.run_id));
    assert.equal(page.page_info.has_next_page, page.page_info.next_cursor !== null);
    cursor = page.page_info.next_cursor;
    pages++;
    await createRun(rt, { prompt: 'created while paging', config: { environment_id: 'ok' } });
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(seen, [...ids].reverse());

  const filtered = (await (await rt.fetch('/api/v1/agent/runs?environment_id=other&limit=100')).json()) as { runs: unknown[] };
  assert.equal(filtered.runs.length, 23);
});

test('Idempotency-Key: a retry returns the same run (200); another body with the key is 409', async (t) => {
  const rt = await pausedRuntime(t);
  const headers = { 'Idempotency-Key': 'deploy-42' };
  const body = { prompt: 'deploy', config: { environment_id: 'ok' }, metadata: { b: 1, a: 2 } };
  const first = await createRun(rt, body, { headers });
  assert.equal(first.res.status, 201);
  const retry = await createRun(rt, { metadata: { a: 2, b: 1 }, config: { environment_id: 'ok' }, prompt: 'deploy' }, { headers });
  assert.equal(retry.res.status, 200);
  assert.equal(retry.body.run_id, first.body.run_id);
  assert.equal(retry.res.headers.get('location'), `/api/v1/agent/runs/${first.body.run_id}`);
  const other = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { ...body, prompt: 'deploy again' }, headers });
  await problem(other, 409, 'conflict');
  assert.equal(count(rt), 1);
});

test('Idempotency-Key: a generated notification secret is shown again to the same key repeating the request, and nowhere else', async (t) => {
  const rt = await pausedRuntime(t);
  const body = { prompt: 'deploy', config: { environment_id: 'ok' }, webhook: { url: 'https://hooks.example.com/runs' } };
  const headers = { 'Idempotency-Key': 'notify-1' };
  const first = await createRun(rt, body, { headers });
  assert.equal(first.res.status, 201);
  const secret = first.body.webhook.secret as string;
  assert.match(secret, /^whsec_/);
  // The 201 was lost: the same request again learns the same secret.
  const again = await createRun(rt, body, { headers });
  assert.equal(again.res.status, 200);
  assert.deepEqual(again.body.webhook, { url: 'https://hooks.example.com/runs', secret });
  // Nowhere else: not the run, the list, a repeat under another key, nor one with a secret given.
  const view = await (await rt.fetch(`/api/v1/agent/runs/${first.body.run_id}`)).text();
  const list = await (await rt.fetch('/api/v1/agent/runs')).text();
  for (const text of [view, list]) assert.ok(!text.includes(secret.slice(6)));
  const { raw } = rt.store.keys.create({ name: 'other', kind: 'agent', scopes: ['runs'] });
  const otherKey = await createRun(rt, body, { headers, key: raw });
  assert.equal(otherKey.res.status, 201, 'another key has its own idempotency keys');
  assert.notEqual(otherKey.body.webhook.secret, secret);
  assert.equal(count(rt), 2);
});
