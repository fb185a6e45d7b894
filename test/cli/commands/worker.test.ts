import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FakeClock } from '../../../runtime/clock.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startCli, terminalEnv, execCli, type RunningCli } from '../../helpers/cli.ts';
import { testExecutor } from '../../runtime/executor/helpers.ts';
import { EXAMPLE_AGENTS, startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';
import { applyEnvironments, createRun, envYaml, waitForRun } from '../../runtime/routes/runs-helpers.ts';

/**
 * `factory worker` as a real child process against a runtime that executes nothing itself
 * (--no-executor), with a short lease where a test waits for one to expire (docs/runs.md#workers):
 * it executes a run to SUCCEEDED with its transcript, a cancel reaches it, SIGTERM ends its run
 * ERROR runtime_stopped, and a worker killed mid-run leaves its run to the sweeper: ERROR worker_lost.
 */

const LEASE = 3;
let workDir: string;
/** Each worker's own work dir (a worker takes its work dir for itself alone). */
const workDirOf = (name: string) => path.join(workDir, name);
const executor = testExecutor();

before(() => {
  workDir = mkdtempSync(path.join(tmpdir(), 'factory-worker-ws-'));
});
after(() => {
  rmSync(workDir, { recursive: true, force: true });
});

/**
 * A runtime of this test alone (stopped when it ends), with the `ok` and `slow` environments and a
 * worker key: the tests run at once, and a worker claims any queued run of its runtime. The lease
 * is the default unless the test is about its expiry (`leaseSeconds`): with several tests at once
 * on a loaded machine, a short lease could expire under a run that should end otherwise.
 */
async function workerRuntime(t: TestContext, leaseSeconds?: number): Promise<{ rt: TestRuntime; workerKey: string }> {
  const rt = await startTestRuntime({ flags: { executor: false, leaseSeconds } });
  t.after(() => rt.stop());
  await applyEnvironments(rt, {
    ok: envYaml({ setup: ['echo preparing'], command: ['node', path.join(EXAMPLE_AGENTS, 'scripted-agent.mjs')], env: { GREETING: 'hi' } }),
    slow: envYaml({ command: ['sleep', '30'], timeout: '5m' }),
  });
  const res = await rt.fetch('/api/v1/keys', { method: 'POST', json: { name: 'box', kind: 'agent', scopes: ['worker'] } });
  assert.equal(res.status, 201);
  return { rt, workerKey: ((await res.json()) as { key: string }).key };
}

function startWorker(t: TestContext, rt: TestRuntime, workerKey: string, name: string): RunningCli {
  const w = startCli(
    ['worker', '--server', rt.url, '--concurrency', '2', '--executor', executor, '--sandbox-ro-bind', EXAMPLE_AGENTS, '--work-dir', workDirOf(name), '--name', name],
    { env: terminalEnv({ FACTORY_API_KEY: workerKey }) },
  );
  t.after(() => w.child.kill('SIGKILL'));
  return w;
}

/** A worker of one run at a time against a runtime of its own test, with a worker key made there. */
async function startKeyedWorker(t: TestContext, runtime: TestRuntime, name: string): Promise<RunningCli> {
  const created = await runtime.fetch('/api/v1/keys', { method: 'POST', json: { name, kind: 'agent', scopes: ['worker'] } });
  assert.equal(created.status, 201);
  const key = ((await created.json()) as { key: string }).key;
  const w = startCli(
    ['worker', '--server', runtime.url, '--concurrency', '1', '--executor', executor, '--work-dir', workDirOf(name), '--name', name],
    { env: terminalEnv({ FACTORY_API_KEY: key }) },
  );
  t.after(() => w.child.kill('SIGKILL'));
  return w;
}

/**
 * A runtime that executes nothing (lease 15 s) and a worker of its own; the worker starts a run of
 * `script` (sh -c), then the runtime stops and the worker notices it is away. What a restart test
 * needs to start the runtime again on the same data dir and port.
 */
async function runOnWorkerThenStop(t: TestContext, name: string, script: string) {
  const dataDir = mkdtempSync(path.join(tmpdir(), `factory-worker-${name}-`));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startTestRuntime({ dataDir, flags: { executor: false, leaseSeconds: 15 } });
  let stopped = false;
  t.after(() => (stopped ? undefined : first.stop()));
  await applyEnvironments(first, { script: envYaml({ command: ['/bin/sh', '-c', script], timeout: '5m' }) });
  const w = await startKeyedWorker(t, first, `w-${name}`);
  const { res, body } = await createRun(first, { prompt: 'wait', config: { environment_id: 'script' } });
  assert.equal(res.status, 201);
  const id = body.run_id as string;
  await w.waitFor(() => w.stdout().includes(`started ${id}`), 'the run to start');
  const port = first.port;
  await first.stop();
  stopped = true;
  await w.waitFor(() => /cannot reach the runtime/.test(w.stdout()), 'the worker to notice the runtime is away');
  return { dataDir, port, w, id };
}

const run = async (rt: TestRuntime, env: string) => {
  const { res, body } = await createRun(rt, { prompt: 'Say hi', config: { environment_id: env } });
  assert.equal(res.status, 201);
  return body.run_id as string;
};

// Each test has a runtime of its own, so they run at once: most of their time is spent waiting
// (a child worker starting, a lease expiring, a runtime coming back).
describe('factory worker', { concurrency: true }, () => {
  test('a worker executes a run to SUCCEEDED with its transcript; SIGTERM stops it with its run ERROR runtime_stopped', { timeout: 120_000 }, async (t) => {
    const { rt, workerKey } = await workerRuntime(t);
    const w = startWorker(t, rt, workerKey, 'w-one');
    await w.waitFor(() => /factory worker w-one executing runs of/.test(w.stdout()), 'the start line');

    const id = await run(rt, 'ok');
    const done = await waitForRun(rt, id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const transcript = (await (await rt.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, any> }[] };
    const types = transcript.events.map((e) => e.type);
    assert.equal(types[0], 'state');
    assert.equal(types.at(-1), 'state');
    assert.ok(transcript.events.some((e) => e.type === 'command' && e.data.phase === 'setup' && /preparing/.test(e.data.output)), 'the setup command and its output');
    assert.ok(transcript.events.some((e) => e.type === 'output' && String(e.data.text).includes(`scripted-agent: run ${id}`)), 'the agent output');
    await w.waitFor(() => w.stdout().includes(`finished ${id} SUCCEEDED`), 'the finished line');
    assert.match(w.stdout(), new RegExp(`started ${id}`));
    assert.ok(!readdirSync(workDirOf('w-one')).includes(id), 'the workspace is removed when the run ends');
    // Only run commands of another user that reach their workspace by path need to pass through it.
    assert.equal(statSync(workDirOf('w-one')).mode & 0o777, executor === 'direct' && process.getuid?.() === 0 ? 0o711 : 0o700);

    const slow = await run(rt, 'slow');
    await w.waitFor(() => w.stdout().includes(`started ${slow}`), 'the slow run to start');
    w.child.kill('SIGTERM');
    assert.equal(await w.closed, 0, w.stderr());
    const stopped = await waitForRun(rt, slow);
    assert.equal(stopped.state, 'ERROR');
    assert.equal(stopped.error_code, 'runtime_stopped');
    assert.equal(stopped.retryable, true);
  });

  test('an agent event far over the API body limit is cut where it is read: the worker reports the run to its end', { timeout: 120_000 }, async (t) => {
    const { rt, workerKey } = await workerRuntime(t);
    const script = "process.stdout.write(JSON.stringify({type:'item.completed',item:{type:'todo_list',items:['\\u00e9'.repeat(600000)]}})+'\\n'); console.log('after')";
    await applyEnvironments(rt, { big: envYaml({ command: ['node', '-e', script], format: 'codex-json' }) });
    startWorker(t, rt, workerKey, 'w-big');
    const id = await run(rt, 'big');
    const done = await waitForRun(rt, id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const transcript = (await (await rt.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, any> }[] };
    const message = transcript.events.find((e) => e.type === 'message');
    assert.ok(message && message.data.truncated === true && Buffer.byteLength(JSON.stringify(message.data)) <= 64 * 1024, JSON.stringify(message).slice(0, 300));
    assert.ok(transcript.events.some((e) => e.type === 'output' && String(e.data.text).includes('after')), 'what the agent printed after it is there');
  });

  test('a cancel reaches the worker: its run ends CANCELLED', { timeout: 120_000 }, async (t) => {
    const { rt, workerKey } = await workerRuntime(t);
    const w = startWorker(t, rt, workerKey, 'w-two');
    const id = await run(rt, 'slow');
    await w.waitFor(() => w.stdout().includes(`started ${id}`), 'the run to start');
    assert.equal((await rt.fetch(`/api/v1/agent/runs/${id}/cancel`, { method: 'POST' })).status, 200);
    const done = await waitForRun(rt, id);
    assert.equal(done.state, 'CANCELLED', JSON.stringify(done));
    assert.equal(done.error_code, 'cancelled');
    await w.waitFor(() => w.stdout().includes(`finished ${id} CANCELLED`), 'the worker to report it');
    w.child.kill('SIGTERM');
    assert.equal(await w.closed, 0);
  });

  test('a worker killed mid-run (SIGKILL): the sweeper ends its run ERROR worker_lost, retryable', { timeout: 120_000 }, async (t) => {
    const { rt, workerKey } = await workerRuntime(t, LEASE);
    const w = startWorker(t, rt, workerKey, 'w-three');
    const id = await run(rt, 'slow');
    await w.waitFor(() => w.stdout().includes(`started ${id}`), 'the run to start');
    // Its agent is about to start once the prompt is written into its workspace.
    await eventually(() => existsSync(path.join(workDirOf('w-three'), id, 'prompt.md')), 'the workspace to be prepared');
    w.child.kill('SIGKILL');
    await w.closed;
    const done = await waitForRun(rt, id);
    assert.equal(done.state, 'ERROR', JSON.stringify(done));
    assert.equal(done.error_code, 'worker_lost');
    assert.equal(done.retryable, true);
    // The next worker on that work dir ends what the killed one left: its workspace, and (direct)
    // its agent, which no sandbox ended with it.
    assert.ok(readdirSync(workDirOf('w-three')).includes(id), 'the killed worker left its workspace');
    // A workspace without a worker's mark (a runtime's own, in a work dir it shares) is not touched.
    const foreign = path.join(workDirOf('w-three'), `run_${'a'.repeat(26)}`);
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'prompt.md'), 'a runtime run');
    const next = startWorker(t, rt, workerKey, 'w-three');
    await next.waitFor(() => next.stdout().includes(`removed the workspace of ${id}`), 'the leftover workspace to be removed');
    assert.ok(!readdirSync(workDirOf('w-three')).includes(id));
    assert.ok(existsSync(path.join(foreign, 'prompt.md')), 'an unmarked workspace stays');
    const marker = `FACTORY_RUN_ID=${id}\0`;
    const ofRun = () => readdirSync('/proc').filter((pid) => /^\d+$/.test(pid) && (() => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker);
      } catch {
        return false;
      }
    })());
    // A killed process stays in /proc until the kernel has torn it down (a sandbox's whole PID
    // namespace goes with its bubblewrap): none may be left once that is done.
    await eventually(() => ofRun().length === 0 || undefined, 'no process of the run to be left', { tries: 200 }).catch(() => undefined);
    assert.deepEqual(ofRun(), [], 'no process of the run is left');
    // A second worker on the same work dir is refused in one sentence.
    const twin = startWorker(t, rt, workerKey, 'w-three');
    assert.equal(await twin.closed, 1);
    assert.match(twin.stderr(), new RegExp(`(^|\\n)error: the work dir .*w-three is in use by another worker; stop it first, or give this worker its own --work-dir\\.\\n$`));
  });

  test('factory worker: a key without the worker scope is refused in one sentence, exit 1; a bad flag is a usage error', async (t) => {
    const { rt, workerKey } = await workerRuntime(t);
    const bad = await execCli(['worker', '--server', rt.url, '--executor', 'direct', '--concurrency', '1', '--work-dir', workDirOf('w-refused')], { env: terminalEnv({ FACTORY_API_KEY: rt.adminKey.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) }), limitMs: 60_000 });
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /^error: the runtime refused this worker: .*not valid/m);
    assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
    const usage = await execCli(['worker', '--server', rt.url, '--concurrency', 'many'], { env: terminalEnv({ FACTORY_API_KEY: workerKey }) });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--concurrency must be an integer/);
  });

  test('a worker rides out a restart of serve: it retries while the runtime is away, keeps its run, and the restarted pool leaves the run it holds alone', { timeout: 120_000 }, async (t) => {
    // The agent waits for a file the test writes into its workspace after the restart.
    const gate = 'while [ ! -e "$FACTORY_WORKSPACE/go" ]; do sleep 0.2; done; echo passed the gate';
    const { dataDir, port, w, id } = await runOnWorkerThenStop(t, 'restart', gate);
    // Back on the same port, executing runs itself this time.
    const second = await startTestRuntime({ dataDir, flags: { port, leaseSeconds: 15 } });
    t.after(() => second.stop());
    assert.equal((await waitForRun(second, id, () => true)).state, 'INPROGRESS', 'the restarted pool did not end the worker\'s run');
    writeFileSync(path.join(workDirOf('w-restart'), id, 'go'), '');
    const done = await waitForRun(second, id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const transcript = (await (await second.fetch(`/api/v1/agent/runs/${id}/transcript`)).json()) as { events: { type: string; data: Record<string, any> }[] };
    assert.ok(transcript.events.some((e) => e.type === 'output' && String(e.data.text).includes('passed the gate')));
    w.child.kill('SIGTERM');
    assert.equal(await w.closed, 0);
  });

  test('a worker whose lease was lost while the runtime was away is refused (409) and stops the run', { timeout: 120_000 }, async (t) => {
    const { dataDir, port, w, id } = await runOnWorkerThenStop(t, 'lost', 'while true; do sleep 0.2; done');
    // Back an hour later: the lease has long expired, the sweeper ends the run. The lease it
    // expired was granted before the restart; this runtime's short one only makes it sweep sooner.
    const later = new FakeClock(Date.now() + 3_600_000);
    const second = await startTestRuntime({ dataDir, clock: later, flags: { port, executor: false, leaseSeconds: LEASE } });
    t.after(() => second.stop());
    const ended = await waitForRun(second, id);
    assert.equal(ended.state, 'ERROR');
    assert.equal(ended.error_code, 'worker_lost');
    // The worker's next heartbeat is refused; it stops the agent (which never ends by itself).
    await w.waitFor(() => w.stdout().includes(`finished ${id} without reporting it: its lease was lost`), 'the worker to stop the run');
    assert.match(w.stdout(), new RegExp(`lost the lease of ${id}`));
    assert.equal((await waitForRun(second, id)).error_code, 'worker_lost', 'nothing the worker sent changed the run');
    w.child.kill('SIGTERM');
    assert.equal(await w.closed, 0);
  });
});
