import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from '../../../cli/compiler/compile.ts';
import { startCli } from '../../helpers/cli.ts';
import { eventually } from '../../helpers/eventually.ts';
import { AGENTS, isGone, processesOfRun, processesWith, sandboxSkip } from './helpers.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** `factory serve` as a child process; resolves with its URL once it listens. */
async function serve(dataDir: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const serving = startCli(['serve', '--port', '0', '--data-dir', dataDir, '--max-concurrent-runs', '1', ...args], { cwd: ROOT, env: { ...process.env } as Record<string, string> });
  const listening = () => /listening on (http:\/\/\S+)/.exec(serving.stdout());
  await serving.waitFor(() => listening() !== null, 'serve to listen');
  return { child: serving.child, url: listening()![1] };
}

async function apply(url: string, key: string, sleeper: string[]): Promise<void> {
  const files = [
    { path: 'factory.yaml', text: 'name: recovery\n' },
    { path: 'environments/sleeper.yaml', text: JSON.stringify({ agent: { command: sleeper } }) },
    { path: 'environments/ok.yaml', text: JSON.stringify({ agent: { command: ['node', path.join(AGENTS, 'scripted-agent.mjs')] } }) },
  ];
  const { snapshot } = compile(files);
  assert.ok(snapshot);
  const res = await fetch(`${url}/api/v1/factories/recovery/apply`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ snapshot }) });
  assert.equal(res.status, 200, await res.text());
}

function call(key: string) {
  return async (url: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as Record<string, any>;
  };
}

const finished = (run: Record<string, any>) => ['SUCCEEDED', 'FAILED', 'ERROR'].includes(run.state);

/** After the restart: the run cut short by the crash is ERROR and retryable, and the queued run still runs. */
async function assertRecovered(api: ReturnType<typeof call>, url: string, crashedId: string, queuedId: string): Promise<void> {
  const crashed = await api(url, `/api/v1/agent/runs/${crashedId}`);
  assert.deepEqual(
    [crashed.state, crashed.retryable, crashed.error_code, crashed.status_message],
    ['ERROR', true, 'runtime_stopped', 'the runtime stopped while the run was in progress'],
  );
  const next = await eventually(() => api(url, `/api/v1/agent/runs/${queuedId}`), 'the queued run to finish', { until: finished, tries: 400 });
  assert.equal(next.state, 'SUCCEEDED', JSON.stringify(next));
}

// Side by side: each test has its own data dir and runtimes, and finds its processes by names of its own.
describe('recovery after a crash of the runtime', { concurrency: true }, () => {
  test('sandbox: SIGKILL of the runtime during a run takes the run\'s sandbox with it; after a restart the run is ERROR, retryable, and the queue continues', { skip: sandboxSkip() }, async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-recovery-'));
    const dataDir = path.join(dir, 'data');
    const children: ChildProcess[] = [];
    const sleep = `sleep ${randomInt(3000, 9000)}`;
    t.after(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      for (const pid of processesWith(sleep)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });
    const args = ['--sandbox-ro-bind', AGENTS];
    const first = await serve(dataDir, args);
    children.push(first.child);
    const key = readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
    const api = call(key);
    // A daemon that leaves the agent's process group too (setsid): only the sandbox's end stops it.
    await apply(first.url, key, ['/bin/sh', '-c', `setsid ${sleep} & ${sleep} & wait`]);

    const long = await api(first.url, '/api/v1/agent/runs', { prompt: 'sleep', config: { environment_id: 'sleeper' } });
    await eventually(() => processesWith(sleep).length === 2, 'the agent and its daemon to start');
    const queued = await api(first.url, '/api/v1/agent/runs', { prompt: 'after the crash', config: { environment_id: 'ok' } });
    assert.equal(queued.state, 'QUEUED');

    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    // bubblewrap dies with its parent, and its PID namespace with it: nothing of the run is left,
    // before any restart.
    await eventually(() => processesWith(sleep).length === 0 && processesOfRun(long.run_id).length === 0, 'the run\'s processes to be gone');

    const second = await serve(dataDir, args);
    children.push(second.child);
    await assertRecovered(api, second.url, long.run_id, queued.run_id);
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
  });

  test('direct: SIGKILL of the runtime during a run: after a restart the agent is gone, the run is ERROR, retryable, and the queue continues', async (t) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-recovery-'));
    // A direct run as another user (the runtime is root in CI) passes through to its workspace.
    chmodSync(dir, 0o711);
    const dataDir = path.join(dir, 'data');
    const workDir = `${dataDir}-workspaces`;
    let pidFile = '';
    let leaderFile = '';
    const children: ChildProcess[] = [];
    t.after(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      // Should the test fail, do not leave the agent's group (which the SIGKILL did not reach) running.
      for (const f of [leaderFile, pidFile]) {
        if (!f) continue;
        try {
          process.kill(Number(readFileSync(f, 'utf8')), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });

    const args = ['--executor', 'direct'];
    const first = await serve(dataDir, args);
    children.push(first.child);
    const key = readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
    const api = call(key);
    await apply(first.url, key, ['/bin/sh', '-c', 'echo $$ > "$FACTORY_WORKSPACE/agent.pid.tmp"; mv "$FACTORY_WORKSPACE/agent.pid.tmp" "$FACTORY_WORKSPACE/agent.pid"; sleep 300 & echo $! > "$FACTORY_WORKSPACE/sleep.pid.tmp"; mv "$FACTORY_WORKSPACE/sleep.pid.tmp" "$FACTORY_WORKSPACE/sleep.pid"; wait']);

    const long = await api(first.url, '/api/v1/agent/runs', { prompt: 'sleep', config: { environment_id: 'sleeper' } });
    leaderFile = path.join(workDir, long.run_id, 'agent.pid');
    pidFile = path.join(workDir, long.run_id, 'sleep.pid');
    await eventually(() => existsSync(pidFile) && existsSync(leaderFile), 'the agent to start');
    const queued = await api(first.url, '/api/v1/agent/runs', { prompt: 'after the crash', config: { environment_id: 'ok' } });
    assert.equal(queued.state, 'QUEUED');

    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const agentPid = Number(readFileSync(leaderFile, 'utf8'));
    const sleepPid = Number(readFileSync(pidFile, 'utf8'));
    // The agent's group outlived the runtime: it leads its own group, which the SIGKILL did not reach.
    assert.equal(isGone(agentPid) || isGone(sleepPid), false);

    const second = await serve(dataDir, args);
    children.push(second.child);
    // Restart recovery killed the recorded group: the agent and its grandchild are gone.
    await eventually(() => isGone(agentPid) && isGone(sleepPid), 'the orphaned agent and its sleep to be gone');
    await assertRecovered(api, second.url, long.run_id, queued.run_id);

    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
  });
});
