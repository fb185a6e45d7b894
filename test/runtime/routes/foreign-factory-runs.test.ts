import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { AGENTS, applyEnvironments, createRun, envYaml, waitForRun } from './runs-helpers.ts';

/**
 * A key limited to some factories, with the `runs` scope (docs/runtime.md#factory-limited-keys):
 * another factory's run answers exactly as an unknown one on every route that names a run, lists
 * leave it out, and runs are created and retried into the key's own factories only. Real server,
 * real executor: the runs below really run and fail.
 */

const FAILING = envYaml({ command: [process.execPath, path.join(AGENTS, 'failing-agent.mjs')] });
const UNKNOWN_RUN = 'run_nosuchnosuchnosuchnosuchno';

let rt: TestRuntime;
let limited: string;
/** A FAILED run of each factory, created through the API on that factory's environment. */
let foreignRun: string;
let ownRun: string;

before(async () => {
  rt = await startTestRuntime();
  await applyEnvironments(rt, { 'theirs-env': FAILING }, 'theirs');
  await applyEnvironments(rt, { 'mine-env': FAILING }, 'mine');
  const created = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'limited', kind: 'agent', scopes: ['runs'], factories: ['mine'] } });
  assert.equal(created.status, 201, await created.clone().text());
  limited = ((await created.json()) as { key: string }).key;
  const theirs = await createRun(rt, { prompt: 'theirs', config: { environment_id: 'theirs-env' } });
  assert.equal(theirs.res.status, 201);
  foreignRun = theirs.body.run_id;
  const mine = await createRun(rt, { prompt: 'mine', config: { environment_id: 'mine-env' } }, { key: limited });
  assert.equal(mine.res.status, 201, JSON.stringify(mine.body));
  ownRun = mine.body.run_id;
  for (const id of [foreignRun, ownRun]) assert.equal((await waitForRun(rt, id)).state, 'FAILED');
});
after(() => rt.stop());

/** Status, content type and body of an answer, with the run id it names replaced, to compare two answers. */
async function shape(res: Response, id: string) {
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), body: text.split(id).join('<id>') };
}

test('another factory\'s run answers exactly like an unknown id on every route that names a run', async () => {
  const routes: { method: 'GET' | 'POST'; path: (id: string) => string }[] = [
    { method: 'GET', path: (id) => `/api/v1/agent/runs/${id}` },
    { method: 'GET', path: (id) => `/api/v1/agent/runs/${id}/transcript` },
    { method: 'POST', path: (id) => `/api/v1/agent/runs/${id}/cancel` },
    { method: 'POST', path: (id) => `/api/v1/agent/runs/${id}/retry` },
    { method: 'GET', path: (id) => `/sessions/${id}` },
  ];
  for (const route of routes) {
    const foreign = await shape(await rt.fetch(route.path(foreignRun), { method: route.method, key: limited }), foreignRun);
    const unknown = await shape(await rt.fetch(route.path(UNKNOWN_RUN), { method: route.method, key: limited }), UNKNOWN_RUN);
    assert.equal(foreign.status, 404, `${route.method} ${route.path('<id>')}: ${foreign.body}`);
    assert.deepEqual(foreign, unknown, `${route.method} ${route.path('<id>')}`);
    assert.ok(!foreign.body.includes('theirs'), foreign.body);
    // The run was there all along: the admin key reaches it on the same route.
    if (route.method === 'GET') assert.equal((await rt.fetch(route.path(foreignRun))).status, 200);
  }
  // Nothing was retried or changed by the refused calls.
  const all = (await (await rt.fetch('/api/v1/agent/runs?limit=100')).json()) as { runs: { run_id: string; retry_of: string | null }[] };
  assert.ok(!all.runs.some((r) => r.retry_of === foreignRun));
});

test('the same routes work on the key\'s own run', async () => {
  for (const p of [`/api/v1/agent/runs/${ownRun}`, `/api/v1/agent/runs/${ownRun}/transcript`, `/sessions/${ownRun}`]) {
    assert.equal((await rt.fetch(p, { key: limited })).status, 200, p);
  }
  const retried = await rt.fetch(`/api/v1/agent/runs/${ownRun}/retry`, { method: 'POST', key: limited });
  assert.equal(retried.status, 201, await retried.clone().text());
  const again = (await retried.json()) as { run_id: string; retry_of: string };
  assert.equal(again.retry_of, ownRun);
  // The retry is a run of the key's factory too: it can read it.
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${again.run_id}`, { key: limited })).status, 200);
});

test('lists hold only the key\'s factories\' runs, whatever the filters; an unlimited key sees both', async () => {
  const list = async (query: string, key?: string) =>
    ((await (await rt.fetch(`/api/v1/agent/runs?limit=100${query}`, key ? { key } : {})).json()) as { runs: { run_id: string; config: { environment_id: string } }[] }).runs;
  const mine = await list('', limited);
  assert.ok(mine.length >= 1);
  assert.ok(mine.every((r) => r.config.environment_id === 'mine-env'), JSON.stringify(mine));
  assert.ok(mine.some((r) => r.run_id === ownRun));
  assert.deepEqual(await list('&environment_id=theirs-env', limited), []);
  assert.deepEqual(await list(`&q=theirs`, limited), []);
  const everyone = await list('');
  assert.ok(everyone.some((r) => r.run_id === foreignRun) && everyone.some((r) => r.run_id === ownRun));
});

test('a limited key creates runs on its factories\' environments only; another factory\'s is an unknown one', async () => {
  const foreign = await createRun(rt, { prompt: 'x', config: { environment_id: 'theirs-env' } }, { key: limited });
  const unknown = await createRun(rt, { prompt: 'x', config: { environment_id: 'nosuch-env' } }, { key: limited });
  assert.equal(foreign.res.status, 400);
  assert.deepEqual(JSON.parse(JSON.stringify(foreign.body).split('theirs-env').join('<env>')), JSON.parse(JSON.stringify(unknown.body).split('nosuch-env').join('<env>')));
  // Without environment_id: the runtime has two environments, but the key reaches one, which it takes.
  const implicit = await createRun(rt, { prompt: 'x' }, { key: limited });
  assert.equal(implicit.res.status, 201, JSON.stringify(implicit.body));
  assert.equal(implicit.body.config.environment_id, 'mine-env');
  // The admin key is told of both and must choose.
  const ambiguous = await createRun(rt, { prompt: 'x' });
  assert.equal(ambiguous.res.status, 400);
  assert.equal(ambiguous.body.code, 'invalid_request');
  assert.match(ambiguous.body.detail, /this runtime has 2: mine-env, theirs-env/);
  assert.equal((await waitForRun(rt, implicit.body.run_id)).state, 'FAILED');
});

test('a run keeps its factory when its environment moves: the limited key cannot follow it or retry into the new one', async () => {
  // `mine` drops mine-env and `theirs` defines it: the run made on it stays mine's, and its retry is refused.
  await applyEnvironments(rt, {}, 'mine');
  await applyEnvironments(rt, { 'theirs-env': FAILING, 'mine-env': FAILING }, 'theirs');
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${ownRun}`, { key: limited })).status, 200);
  const retry = await rt.fetch(`/api/v1/agent/runs/${ownRun}/retry`, { method: 'POST', key: limited });
  assert.equal(retry.status, 409);
  const body = (await retry.json()) as { code: string; detail: string };
  assert.equal(body.code, 'conflict');
  assert.match(body.detail, /now belongs to a factory this API key may not use/);
  assert.ok(!body.detail.includes('theirs'), body.detail);
  // A new run on it is now theirs: refused to the limited key as an unknown environment.
  const moved = await createRun(rt, { prompt: 'x', config: { environment_id: 'mine-env' } }, { key: limited });
  assert.equal(moved.res.status, 400);
  assert.equal(moved.body.code, 'invalid_request');
});
