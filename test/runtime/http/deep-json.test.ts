import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '@koa/router';
import { MAX_FILTER_DEPTH } from '../../../core/filter.ts';
import { MAX_JSON_DEPTH } from '../../../core/json-depth.ts';
import { ROUTES } from '../../../runtime/routes/index.ts';
import { applyFactory, createSecret, FACTORY } from '../automations/helpers.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook } from '../ingress/helpers.ts';
import { ROUTE_SCOPES } from '../routes/scope-table.ts';

/**
 * docs/api.md: a body that nests deeper than anything legitimate is the client's mistake, so every
 * JSON-accepting route of the management and run APIs answers 400 invalid_json, never a 500
 * (a deep value used to overflow the stack in JSON.stringify, e.g. run metadata).
 */

let rt: TestRuntime;
let webhookUid: string;

/** 10,000 levels of `{"a": ...}` (valid JSON, ~60 KB: well under the body cap). */
const DEEP_OBJECT = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
const DEEP_ARRAY = '['.repeat(10_000) + ']'.repeat(10_000);

/** A payload filter that nests exactly to the filter limit: MAX_FILTER_DEPTH objects, then a list. */
function deepestFilter(): unknown {
  let filter: unknown = { in: ['x'] };
  for (let i = 1; i < MAX_FILTER_DEPTH; i++) filter = { a: filter };
  return filter;
}

before(async () => {
  rt = await startTestRuntime();
  await createSecret(rt);
  // The deepest legitimate body: a snapshot whose filter sits at the filter's own depth limit.
  await applyFactory(rt, { deep: { payload: deepestFilter() } });
  webhookUid = (await createHook(rt, 'api-made', { name: 'hook' })).uid;
});
after(() => rt.stop());

/** Every route that reads a JSON body: the rows of the scope table that send one, plus rotate (optional body). */
function jsonRoutes(): { method: string; path: string; field: string }[] {
  const rows = ROUTE_SCOPES.filter((r) => r.body !== undefined || r.path.endsWith('/rotate'));
  return rows.map((r) => ({
    method: r.method,
    // Real resources, so that each route gets as far as reading its body.
    path: r.path
      .replace('wh_placeholder', webhookUid)
      .replace('/automations/placeholder/placeholder/', `/automations/${FACTORY}/deep/`)
      .replace('/factories/placeholder/webhooks', '/factories/api-made/webhooks'),
    field: r.body && typeof r.body === 'object' ? Object.keys(r.body)[0] : 'secret',
  }));
}

test('the scope table lists every POST, PUT and PATCH route (so the list below is complete)', () => {
  const router = new Router();
  for (const register of ROUTES) register(router, rt.app.context.deps);
  for (const layer of router.stack) {
    if (typeof layer.path !== 'string' || !layer.path.startsWith('/api/')) continue;
    for (const method of layer.methods.filter((m) => ['POST', 'PUT', 'PATCH'].includes(m))) {
      assert.ok(ROUTE_SCOPES.some((r) => r.method === method && layer.match(r.path)), `${method} ${layer.path}`);
    }
  }
});

test('a deeply nested body to every JSON-accepting route is 400 invalid_json, never a 500', async () => {
  const routes = jsonRoutes();
  assert.ok(routes.length >= 10, `found ${routes.length} routes`);
  for (const route of routes) {
    for (const [shape, deep] of [['top level', DEEP_OBJECT], ['top-level array', DEEP_ARRAY], [`in "${route.field}"`, `{"${route.field}":${DEEP_OBJECT}}`]]) {
      const res = await rt.fetch(route.path, { method: route.method, headers: { 'Content-Type': 'application/json' }, body: deep });
      const what = `${route.method} ${route.path} (${shape})`;
      assert.equal(res.status, 400, what);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, what);
      const problem = (await res.json()) as { code: string; detail: string };
      assert.equal(problem.code, 'invalid_json', what);
      assert.equal(problem.detail, `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`, what);
    }
  }
  assert.equal((await rt.fetch('/healthz')).status, 200);
});

test('run metadata nested 10,000 levels deep is a 400, not a 500', async () => {
  const body = `{"prompt":"x","config":{"environment_id":"agent"},"metadata":${DEEP_OBJECT}}`;
  const res = await rt.fetch('/api/v1/agent/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  assert.equal(res.status, 400);
  assert.equal(((await res.json()) as { code: string }).code, 'invalid_json');
});

test('a body exactly at the limit is read; one level more is refused', async () => {
  const nest = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
  const post = (body: string) => rt.fetch('/api/v1/agent/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  // An unknown environment: a body that was read and parsed gets that 400, so no run starts.
  const run = (metadata: string, prompt = 'x') => `{"prompt":"${prompt}","config":{"environment_id":"nowhere"},"metadata":${metadata}}`;
  // metadata is level 2 of the body, so the body's depth is metadata's + 1.
  const at = await post(run(nest(MAX_JSON_DEPTH - 1)));
  assert.equal(((await at.json()) as { code: string }).code, 'invalid_request');
  const over = await post(run(nest(MAX_JSON_DEPTH)));
  assert.equal(over.status, 400);
  assert.equal(((await over.json()) as { code: string }).code, 'invalid_json');
  // Brackets inside strings do not count.
  const strings = await post(run(`{"s":"${'{'.repeat(1000)}"}`, '['.repeat(1000)));
  assert.equal(((await strings.json()) as { code: string }).code, 'invalid_request');
});
