import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../../runtime/clock.ts';
import { CANCEL_CHANNEL } from '../../../runtime/store/leases.ts';
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
  rt.services.leases!.sweep();
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
