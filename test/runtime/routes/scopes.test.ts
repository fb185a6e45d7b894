import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Router } from '@koa/router';
import { ROUTES } from '../../../runtime/routes/index.ts';
import type { Scope } from '../../../runtime/store/keys.ts';
import { startTestRuntime } from '../helpers.ts';
import { PUBLIC_ROUTES, ROUTE_SCOPES } from './scope-table.ts';

/** For each scope, a key that has every other scope but not that one (admin implies all). */
const LACKING: Record<Scope, Scope[]> = { admin: ['runs', 'manage', 'worker'], manage: ['runs', 'worker'], runs: ['manage', 'worker'], worker: ['runs', 'manage'] };

test('every route in the table: no key 401, revoked key 401, key without the scope 403', async () => {
  const rt = await startTestRuntime();
  try {
    const revoked = rt.store.keys.create({ name: 'gone', kind: 'agent', scopes: ['admin'] });
    rt.store.keys.revoke(revoked.id);
    const lacking = Object.fromEntries(
      Object.entries(LACKING).map(([scope, scopes]) => [scope, rt.store.keys.create({ name: `no-${scope}`, kind: 'agent', scopes }).raw]),
    ) as Record<Scope, string>;

    for (const row of ROUTE_SCOPES) {
      const cases: [string, string | null, number, string][] = [
        ['no key', null, 401, 'authentication_required'],
        ['malformed header', 'not a bearer', 401, 'authentication_required'],
        ['unknown key', 'fk_' + 'A'.repeat(43), 401, 'authentication_required'],
        ['revoked key', revoked.raw, 401, 'authentication_required'],
        [`key without ${row.scope}`, lacking[row.scope], 403, 'not_authorized'],
      ];
      for (const [label, key, status, code] of cases) {
        const init: RequestInit & { key?: string | null; json?: unknown } = { method: row.method, key, json: row.body };
        if (label === 'malformed header') {
          init.key = null;
          init.headers = { Authorization: key! };
        }
        const res = await rt.fetch(row.path, init);
        const what = `${row.method} ${row.path} with ${label}`;
        assert.equal(res.status, status, what);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, what);
        assert.equal(((await res.json()) as { code: string }).code, code, what);
        if (status === 401) assert.equal(res.headers.get('www-authenticate'), 'Bearer', what);
      }
    }
  } finally {
    await rt.stop();
  }
});

test('every /api/ route of the runtime is in the scope table', async () => {
  const rt = await startTestRuntime();
  try {
    const router = new Router();
    for (const register of ROUTES) register(router, rt.app.context.deps);
    const missing: string[] = [];
    for (const layer of router.stack) {
      if (typeof layer.path !== 'string' || !layer.path.startsWith('/api/')) continue;
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        // A row covers a route when its concrete path matches the route's pattern.
        const rows = [...ROUTE_SCOPES, ...PUBLIC_ROUTES];
        if (!rows.some((r) => r.method === method && layer.match(r.path))) missing.push(`${method} ${layer.path}`);
      }
    }
    assert.deepEqual(missing, [], 'add these routes to test/runtime/routes/scope-table.ts');
  } finally {
    await rt.stop();
  }
});

test('the public /api/ routes answer 200 without a key, and ignore a bad one', async () => {
  const rt = await startTestRuntime();
  try {
    for (const row of PUBLIC_ROUTES) {
      for (const key of [null, 'fk_' + 'A'.repeat(43)]) {
        const res = await rt.fetch(row.path, { method: row.method, key });
        assert.equal(res.status, 200, `${row.method} ${row.path} with ${key ? 'an unknown key' : 'no key'}`);
        await res.arrayBuffer();
      }
    }
  } finally {
    await rt.stop();
  }
});

test('/sessions/<id>, the one authenticated route outside /api/: the page without a key, else the same checks as the table', async () => {
  const rt = await startTestRuntime();
  try {
    // The checks come before the lookup, so any well-formed id will do (runs.test.ts covers the 200).
    const runId = 'run_' + 'a'.repeat(26);
    const revoked = rt.store.keys.create({ name: 'gone', kind: 'agent', scopes: ['admin'] });
    rt.store.keys.revoke(revoked.id);
    const noRuns = rt.store.keys.create({ name: 'manager', kind: 'agent', scopes: ['manage'] });
    const path = `/sessions/${runId}`;

    const page = await rt.fetch(path, { key: null });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const html = await page.text();
    assert.ok(!html.includes(runId), 'the page is the same for every id');

    for (const [label, key, status, code] of [
      ['unknown key', 'fk_' + 'A'.repeat(43), 401, 'authentication_required'],
      ['revoked key', revoked.raw, 401, 'authentication_required'],
      ['key without runs', noRuns.raw, 403, 'not_authorized'],
    ] as const) {
      const res = await rt.fetch(path, { key });
      assert.equal(res.status, status, label);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, label);
      assert.equal(((await res.json()) as { code: string }).code, code, label);
    }
  } finally {
    await rt.stop();
  }
});
