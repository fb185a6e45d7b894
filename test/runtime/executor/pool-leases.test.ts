import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { CANCEL_CHANNEL, LEASE_LOST } from '../../../runtime/store/leases.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { applyEnvironments, createRun, envYaml, waitForRun } from '../routes/runs-helpers.ts';

/**
 * The in-process pool holds a lease on each run it executes (docs/runs.md#workers): it stops a run
 * whose cancel was asked through another replica (the channel), and a run whose lease it lost
 * (ended worker_lost by the sweeper) without recording anything more. Time is a FakeClock; the
 * agent sleeps far longer than the test's limit, so a run that is not stopped fails the test.
 */

// An hour: the pool's own heartbeat (a third of it) never comes within a test, so only the channel
// can carry the cancel.
const LEASE = 3600;
let rt: TestRuntime;
let clock: FakeClock;

before(async () => {
  clock = new FakeClock(new Date());
  rt = await startTestRuntime({ clock, flags: { leaseSeconds: LEASE } });
  await applyEnvironments(rt, { slow: envYaml({ command: ['sleep', '300'], timeout: '10m' }) });
});
after(() => rt.stop());

const startSlow = async () => {
  const { res, body } = await createRun(rt, { prompt: 'wait', config: { environment_id: 'slow' } });
  assert.equal(res.status, 201);
  const id = body.run_id as string;
  await waitForRun(rt, id, (r) => r.state === 'INPROGRESS');
  // The agent has started once its process group is recorded.
  await eventually(() => rt.store.runs.processGroups(id).length > 0, 'the agent to start');
  return id;
};

test('the pool claims with its own lease, and a cancel asked elsewhere (the channel) stops its run: CANCELLED', { timeout: 60_000 }, async () => {
  const pool = rt.services.executor!;
  const id = await startSlow();
  assert.equal(rt.store.leases.holderOf(id)?.id, pool.holder.id);
  // What the cancel route of another replica does: mark the run, then notify.
  assert.equal(rt.store.leases.requestCancel(id), true);
  rt.store.notify(CANCEL_CHANNEL, id);
  const done = await waitForRun(rt, id);
  assert.equal(done.state, 'CANCELLED');
  assert.equal(done.error_code, 'cancelled');
});

test('a run whose lease the pool lost is stopped, and stays ERROR worker_lost with nothing written after it', { timeout: 60_000 }, async () => {
  const pool = rt.services.executor!;
  const id = await startSlow();
  clock.advance((LEASE + 1) * 1000);
  // Another replica's sweep (the store's): this runtime's own sweeper renews its pool's leases first.
  rt.store.leases.sweep();
  const swept = await waitForRun(rt, id);
  assert.equal(swept.state, 'ERROR');
  assert.equal(swept.error_code, 'worker_lost');
  pool.heartbeat();
  await pool.idle();
  assert.match(rt.logs.text, /the lease of a run in progress was lost; stopping it/);
  const after = (await (await rt.fetch(`/api/v1/agent/runs/${id}`)).json()) as Record<string, unknown>;
  assert.equal(after.state, 'ERROR');
  assert.equal(after.error_code, 'worker_lost');
  const events = rt.store.runs.events(id, 0, 100);
  assert.equal(events.at(-1)?.type, 'state', 'the sweep\'s state event is the last one');
  assert.equal(events.at(-1)?.data.to, 'ERROR');
});

test('a runtime paused past the lease (a laptop asleep) keeps its own runs: its sweeper renews its pool first', { timeout: 60_000 }, async () => {
  const id = await startSlow();
  clock.advance((LEASE + 1) * 1000);
  assert.deepEqual(rt.services.leases!.sweep(), [], 'nothing ended');
  assert.equal((await (await rt.fetch(`/api/v1/agent/runs/${id}`)).json() as { state: string }).state, 'INPROGRESS');
  assert.equal(rt.store.leases.holderOf(id)?.id, rt.services.executor!.holder.id);
  assert.equal(rt.store.leases.renewAll(rt.services.executor!.holder, 1000).some((h) => h.runId === id), true, 'the lease is held again');
  // A run held under the pool's name that it does not execute (its finish failed, say) is not
  // taken back once its lease ran out: the sweep ends it, and only it.
  const pool = rt.services.executor!;
  pool.pause();
  try {
    const stray = (await createRun(rt, { prompt: 'stray', config: { environment_id: 'slow' } })).body.run_id as string;
    assert.equal(rt.store.leases.claim(pool.holder, 1000)?.run_id, stray);
    clock.advance(2000);
    assert.deepEqual(rt.services.leases!.sweep(), [stray]);
    assert.equal(rt.store.leases.reclaim(stray, pool.holder, 1000), LEASE_LOST);
  } finally {
    pool.resume();
  }
  assert.equal((await (await rt.fetch(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST' })).status), 200);
  assert.equal((await waitForRun(rt, id)).state, 'CANCELLED');
});

test('a run whose executor (another process on this machine) stopped renewing: the sweep ends it and kills its recorded process group', { timeout: 60_000 }, async (t) => {
  const { spawn } = await import('node:child_process');
  const { isGone } = await import('./helpers.ts');
  rt.services.executor!.pause();
  t.after(() => rt.services.executor!.resume());
  const { res, body } = await createRun(rt, { prompt: 'wait', config: { environment_id: 'slow' } });
  assert.equal(res.status, 201);
  const id = body.run_id as string;
  // What a replica that then crashed did: claimed it, started its agent, recorded the group.
  assert.ok(rt.store.leases.claim({ id: 'other-host/4242.x', name: 'crashed' }, 60_000));
  const agent = spawn('/bin/sh', ['-c', 'sleep 300'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FACTORY_RUN_ID: id } });
  t.after(() => {
    try {
      process.kill(-agent.pid!, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  });
  rt.store.runs.addProcessGroup(id, agent.pid!);
  clock.advance(61_000);
  assert.deepEqual(rt.services.leases!.sweep(), [id]);
  assert.equal((await waitForRun(rt, id)).error_code, 'worker_lost');
  await eventually(() => isGone(agent.pid!), 'the lost executor\'s agent to be killed');
  assert.match(rt.logs.text, /killed a process group left running by the run's lost executor/);
});
