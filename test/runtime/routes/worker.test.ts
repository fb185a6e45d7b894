import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { jobTimeLimitMs } from '../../../runtime/executor/job.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml } from './runs-helpers.ts';
import { ROUTE_SCOPES } from './scope-table.ts';

/**
 * The worker API (docs/runs.md#workers, docs/api.md#workers) on a real runtime that executes
 * nothing itself (--no-executor): scopes, claim, heartbeat, events, finish, cancel, and what a
 * holder may do once its lease is gone. Time is a FakeClock, so a lease expires when the test says.
 */

const LEASE = 30;
let rt: TestRuntime;
let clock: FakeClock;
let workerKey: string;
let otherWorkerKey: string;
let runsKey: string;
let manageKey: string;

const key = async (scopes: string[], name: string) => {
  const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name, kind: 'agent', scopes } });
  assert.equal(res.status, 201);
  return ((await res.json()) as { key: string }).key;
};

before(async () => {
  clock = new FakeClock(new Date());
  rt = await startTestRuntime({ flags: { executor: false, leaseSeconds: LEASE }, clock });
  assert.equal(rt.services.executor, undefined, '--no-executor starts no pool');
  // Time is the FakeClock's: the tests sweep by hand, so the real-time sweep must not race them.
  rt.services.leases!.pauseTimer();
  const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'tok', value: 's3cret-value' } });
  assert.equal(secret.status, 201, await secret.clone().text());
  await applyEnvironments(rt, { ok: envYaml({ command: ['true'], env: { PLAIN: 'p', TOKEN: { secret: 'tok' } } }) });
  workerKey = await key(['worker'], 'w1');
  otherWorkerKey = await key(['worker'], 'w2');
  runsKey = await key(['runs'], 'r');
  manageKey = await key(['manage'], 'm');
});
after(() => rt.stop());

const post = (path: string, json: unknown, k: string | null = workerKey) => rt.fetch(path, { method: 'POST', json, key: k });
const claim = (workerId: string, k = workerKey, extra: Record<string, unknown> = {}) => post('/api/v1/worker/claim', { worker: 'box', worker_id: workerId, ...extra }, k);
const runPath = (id: string, what: string) => `/api/v1/worker/runs/${id}/${what}`;
const newRun = async () => {
  const { res, body } = await createRun(rt, { prompt: 'do it', config: { environment_id: 'ok' } });
  assert.equal(res.status, 201);
  return body.run_id as string;
};
const readRun = async (id: string) => (await (await rt.fetch(`/api/v1/agent/runs/${id}`)).json()) as Record<string, any>;
const problem = async (res: Response, status: number, code: string) => {
  assert.equal(res.status, status, await res.clone().text());
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(((await res.json()) as { code: string }).code, code);
};
/** Claims until nothing is queued, finishing what it gets, so each test starts with an empty queue. */
const drain = async () => {
  for (;;) {
    const res = await claim('drainer-0001');
    if (res.status === 204) return;
    const { run } = (await res.json()) as { run: { run_id: string } };
    assert.equal((await post(runPath(run.run_id, 'finish'), { worker_id: 'drainer-0001', state: 'SUCCEEDED' })).status, 200);
  }
};

test('worker routes need the worker scope (runs and manage keys get 403), and a worker key may call nothing else', async () => {
  for (const k of [runsKey, manageKey]) {
    await problem(await claim('worker-0001', k), 403, 'not_authorized');
    await problem(await post(runPath('run_' + 'a'.repeat(26), 'heartbeat'), { worker_id: 'worker-0001' }, k), 403, 'not_authorized');
  }
  for (const row of ROUTE_SCOPES.filter((r) => r.scope !== 'worker')) {
    const res = await rt.fetch(row.path, { method: row.method, json: row.body, key: workerKey });
    await problem(res, 403, 'not_authorized');
  }
  // admin implies worker.
  assert.equal((await claim('admin-000001', rt.adminKey)).status, 204);
});

test('claim: 204 when nothing is queued; a queued run is claimed once, with its job prepared (secrets resolved)', async () => {
  await drain();
  assert.equal((await claim('worker-0001')).status, 204);
  const id = await newRun();
  const res = await claim('worker-0001');
  assert.equal(res.status, 200);
  const body = (await res.json()) as { run: Record<string, any>; job: Record<string, any>; lease_seconds: number };
  assert.equal(body.run.run_id, id);
  assert.equal(body.run.state, 'INPROGRESS');
  assert.equal(body.lease_seconds, LEASE);
  assert.deepEqual(body.job.agent.command, ['true']);
  assert.deepEqual(body.job.env, { PLAIN: 'p', TOKEN: 's3cret-value' });
  assert.equal(body.job.prompt, 'do it');
  assert.deepEqual(body.job.attachments, []);
  // Never twice: another worker finds nothing.
  assert.equal((await claim('worker-0002', otherWorkerKey)).status, 204);
  assert.equal((await post(runPath(id, 'finish'), { worker_id: 'worker-0001', state: 'SUCCEEDED' })).status, 200);
});

test('heartbeat, events and finish of the holder; then the run is done and the lease refuses (409)', async () => {
  await drain();
  const id = await newRun();
  assert.equal((await claim('worker-0003')).status, 200);
  const hb = await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0003' });
  assert.equal(hb.status, 200);
  assert.deepEqual(await hb.json(), { cancel: false });

  const events = [
    { type: 'command', data: { phase: 'agent', text: 'true', exit_code: 0 } },
    { type: 'output', data: { stream: 'stdout', text: 'hello from a worker' } },
  ];
  const ev = await post(runPath(id, 'events'), { worker_id: 'worker-0003', events });
  assert.equal(ev.status, 200);
  assert.deepEqual(await ev.json(), { cancel: false });
  // A state event is the runtime's own; the whole batch is refused.
  await problem(await post(runPath(id, 'events'), { worker_id: 'worker-0003', events: [{ type: 'state', data: { to: 'SUCCEEDED' } }] }), 400, 'invalid_request');

  // Another key with the same worker id is not the holder.
  await problem(await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0003' }, otherWorkerKey), 409, 'conflict');

  const fin = await post(runPath(id, 'finish'), { worker_id: 'worker-0003', state: 'SUCCEEDED', status_message: null, error_code: null });
  assert.equal(fin.status, 200);
  assert.equal(((await fin.json()) as { state: string }).state, 'SUCCEEDED');
  const transcript = (await (await rt.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, unknown> }[] };
  assert.deepEqual(
    transcript.events.map((e) => e.type),
    ['state', 'command', 'output', 'state'],
  );
  assert.equal(transcript.events[2].data.text, 'hello from a worker');

  await problem(await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0003' }), 409, 'conflict');
  await problem(await post(runPath(id, 'events'), { worker_id: 'worker-0003', events }), 409, 'conflict');
  await problem(await post(runPath(id, 'finish'), { worker_id: 'worker-0003', state: 'FAILED' }), 409, 'conflict');
  assert.equal((await readRun(id)).state, 'SUCCEEDED');
});

test('a cancel reaches the holder in its heartbeat answer; the holder finishes the run CANCELLED', async () => {
  await drain();
  const id = await newRun();
  assert.equal((await claim('worker-0004')).status, 200);
  const cancel = await rt.fetch(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST' });
  assert.equal(cancel.status, 200);
  assert.equal((await readRun(id)).state, 'INPROGRESS', 'the holder ends it, not the cancel');
  const hb = await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0004' });
  assert.deepEqual(await hb.json(), { cancel: true });
  const fin = await post(runPath(id, 'finish'), { worker_id: 'worker-0004', state: 'CANCELLED', status_message: 'the run was cancelled', error_code: 'cancelled' });
  assert.equal(fin.status, 200);
  const run = await readRun(id);
  assert.equal(run.state, 'CANCELLED');
  assert.equal(run.error_code, 'cancelled');
});

test('a holder that reports SUCCEEDED after a cancel does not override it: the run ends CANCELLED', async () => {
  await drain();
  const id = await newRun();
  assert.equal((await claim('worker-0014')).status, 200);
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST' })).status, 200);
  const fin = await post(runPath(id, 'finish'), { worker_id: 'worker-0014', state: 'SUCCEEDED', status_message: 'done' });
  assert.equal(fin.status, 200);
  assert.equal(((await fin.json()) as { state: string }).state, 'CANCELLED');
  const run = await readRun(id);
  assert.deepEqual([run.state, run.error_code], ['CANCELLED', 'cancelled']);
});

test('a claimed run is held to its environment\'s time limits: past them the heartbeats are refused, whatever the worker does', async () => {
  await drain();
  const id = await newRun();
  const claimed = (await (await claim('worker-0016')).json()) as { job: Parameters<typeof jobTimeLimitMs>[0] };
  const limitMs = jobTimeLimitMs(claimed.job) + LEASE * 1000;
  let elapsed = 0;
  for (;;) {
    const hb = await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0016' });
    if (hb.status !== 200) {
      await problem(hb, 409, 'conflict');
      break;
    }
    clock.advance((LEASE - 5) * 1000);
    elapsed += (LEASE - 5) * 1000;
    assert.ok(elapsed <= limitMs + LEASE * 1000, `still renewed ${elapsed} ms after the claim, past the ${limitMs} ms limit`);
  }
  assert.ok(elapsed > limitMs - LEASE * 1000, `refused after ${elapsed} ms, before the ${limitMs} ms limit`);
  clock.advance(LEASE * 1000);
  assert.ok(rt.services.leases!.sweep().includes(id));
  const run = await readRun(id);
  assert.deepEqual([run.state, run.error_code], ['ERROR', 'worker_lost']);
});

test('events sent again with the same first_index (a lost answer) are stored once', async () => {
  await drain();
  const id = await newRun();
  assert.equal((await claim('worker-0015')).status, 200);
  const batch = (first: number, texts: string[]) =>
    post(runPath(id, 'events'), { worker_id: 'worker-0015', first_index: first, events: texts.map((text) => ({ type: 'output', data: { stream: 'stdout', text } })) });
  assert.equal((await batch(0, ['a', 'b'])).status, 200);
  assert.equal((await batch(0, ['a', 'b'])).status, 200);
  assert.equal((await batch(2, ['c'])).status, 200);
  await problem(await batch(-1, ['x']), 400, 'invalid_request');
  const transcript = (await (await rt.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, unknown> }[] };
  assert.deepEqual(transcript.events.filter((e) => e.type === 'output').map((e) => e.data.text), ['a', 'b', 'c']);
  assert.equal((await post(runPath(id, 'finish'), { worker_id: 'worker-0015', state: 'SUCCEEDED' })).status, 200);
});

test('an expired lease: the holder is refused (409), the sweeper ends the run ERROR worker_lost, retryable; a later cancel has nothing to ask', async () => {
  await drain();
  const id = await newRun();
  const other = await newRun();
  assert.equal((await claim('worker-0005')).status, 200);
  assert.equal((await claim('worker-0006', otherWorkerKey)).status, 200);
  // worker-0006 keeps renewing; worker-0005 goes silent past its lease.
  clock.advance((LEASE - 5) * 1000);
  assert.equal((await post(runPath(other, 'heartbeat'), { worker_id: 'worker-0006' }, otherWorkerKey)).status, 200);
  clock.advance(10 * 1000);
  await problem(await post(runPath(id, 'heartbeat'), { worker_id: 'worker-0005' }), 409, 'conflict');
  await problem(await post(runPath(id, 'events'), { worker_id: 'worker-0005', events: [{ type: 'output', data: { text: 'late' } }] }), 409, 'conflict');

  const swept = rt.services.leases!.sweep();
  assert.deepEqual(swept, [id]);
  assert.deepEqual(rt.services.leases!.sweep(), [], 'a second sweep ends nothing more');
  const run = await readRun(id);
  assert.equal(run.state, 'ERROR');
  assert.equal(run.error_code, 'worker_lost');
  assert.equal(run.retryable, true);
  await problem(await post(runPath(id, 'finish'), { worker_id: 'worker-0005', state: 'SUCCEEDED' }), 409, 'conflict');
  const transcript = (await (await rt.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, unknown> }[] };
  assert.ok(!transcript.events.some((e) => e.data.text === 'late'), 'nothing of the lost holder was written');

  // The live holder is untouched.
  assert.equal((await readRun(other)).state, 'INPROGRESS');
  // A run in progress without a live holder is cancelled at once.
  clock.advance((LEASE + 1) * 1000);
  assert.equal((await rt.fetch(`/api/v1/agent/runs/${other}/cancel`, { method: 'POST' })).status, 200);
  assert.equal((await readRun(other)).state, 'CANCELLED');
});

test('a waiting claim gets the run created while it waits', async () => {
  await drain();
  const waiting = claim('worker-0007', workerKey, { wait_seconds: 20, capacity: 1 });
  const id = await newRun();
  const res = await waiting;
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { run: { run_id: string } }).run.run_id, id);
  assert.equal((await post(runPath(id, 'finish'), { worker_id: 'worker-0007', state: 'FAILED', status_message: 'agent exited with exit code 1', error_code: 'agent_failed' })).status, 200);
  const run = await readRun(id);
  assert.equal(run.state, 'FAILED');
  assert.equal(run.retryable, false);
});

test('a claim waiting when its key is revoked ends with a 401 and is given no run', async () => {
  await drain();
  const res0 = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'w-revoked', kind: 'agent', scopes: ['worker'] } });
  const { id: keyId, key: doomed } = (await res0.json()) as { id: string; key: string };
  const waiting = claim('worker-0009', doomed, { wait_seconds: 20, capacity: 1 });
  await eventually(() => rt.services.leases!.waiting > 0, 'the claim waits');
  assert.equal((await rt.fetch(`/api/v1/keys/${keyId}/revoke`, { method: 'POST' })).status, 200);
  const id = await newRun();
  await problem(await waiting, 401, 'authentication_required');
  assert.equal((await readRun(id)).state, 'QUEUED', 'the run stays for a valid worker');
  await drain();
});

test('bad worker requests are 400 problem+json naming the field; an unknown run is a 404', async () => {
  await problem(await post('/api/v1/worker/claim', { worker: 'box' }), 400, 'invalid_request');
  await problem(await post('/api/v1/worker/claim', { worker: 'box', worker_id: 'short' }), 400, 'invalid_request');
  await problem(await post('/api/v1/worker/claim', { worker: 'box', worker_id: 'worker-0008', wait_seconds: 99 }), 400, 'invalid_request');
  await problem(await post('/api/v1/worker/claim', { worker: 'box', worker_id: 'worker-0008', extra: 1 }), 400, 'invalid_request');
  await problem(await post('/api/v1/worker/claim', [1]), 400, 'invalid_request');
  await problem(await post(runPath('run_' + 'a'.repeat(26), 'heartbeat'), { worker_id: 'worker-0008' }), 404, 'resource_not_found');
  const id = await newRun();
  assert.equal((await claim('worker-0008')).status, 200);
  await problem(await post(runPath(id, 'finish'), { worker_id: 'worker-0008', state: 'DONE' }), 400, 'invalid_request');
  await problem(await post(runPath(id, 'finish'), { worker_id: 'worker-0008', state: 'FAILED', error_code: 'nope' }), 400, 'invalid_request');
  await problem(await post(runPath(id, 'events'), { worker_id: 'worker-0008', events: 'x' }), 400, 'invalid_request');
  assert.equal((await post(runPath(id, 'finish'), { worker_id: 'worker-0008', state: 'ERROR', status_message: 'x', error_code: 'platform_error' })).status, 200);
  assert.equal((await readRun(id)).retryable, true);
});

test('a worker key limited to some factories claims only their runs, the other factories\' staying queued for others', async () => {
  await drain();
  await applyEnvironments(rt, { 'other-ok': envYaml({ command: ['true'] }) }, 'other');
  const created = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'w-other', kind: 'agent', scopes: ['worker'], factories: ['other'] } });
  assert.equal(created.status, 201, await created.clone().text());
  const limited = ((await created.json()) as { key: string }).key;
  // Only a run of `tests` is queued: nothing for the limited worker.
  const theirs = await newRun();
  assert.equal((await claim('limited-0001', limited)).status, 204);
  // A run of `other`, created after it: the limited worker gets that one, not the older.
  const { res, body } = await createRun(rt, { prompt: 'other work', config: { environment_id: 'other-ok' } });
  assert.equal(res.status, 201);
  const mine = await claim('limited-0001', limited);
  assert.equal(mine.status, 200);
  assert.equal(((await mine.json()) as { run: { run_id: string } }).run.run_id, body.run_id);
  assert.equal((await claim('limited-0001', limited)).status, 204);
  assert.equal((await readRun(theirs)).state, 'QUEUED');
  // An unlimited worker still takes it.
  const other = await claim('worker-0009');
  assert.equal(((await other.json()) as { run: { run_id: string } }).run.run_id, theirs);
  for (const [id, w] of [[body.run_id, 'limited-0001'], [theirs, 'worker-0009']] as const) {
    assert.equal((await post(runPath(id, 'finish'), { worker_id: w, state: 'SUCCEEDED' }, w === 'limited-0001' ? limited : workerKey)).status, 200);
  }
});
