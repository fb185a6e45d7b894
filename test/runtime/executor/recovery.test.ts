import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from '../../../cli/compiler/compile.ts';
import { isGone, waitFor } from './helpers.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** `factory serve` as a child process; resolves with its URL once it listens. */
function serve(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/factory.js'), 'serve', '--port', '0', '--data-dir', dataDir, '--max-concurrent-runs', '1'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

test('SIGKILL of the runtime during a run: after a restart the agent is gone, the run is ERROR, retryable, and the queue continues', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-recovery-'));
  const dataDir = path.join(dir, 'data');
  const pidFile = path.join(dir, 'grandchild.pid');
  const leaderFile = path.join(dir, 'agent.pid');
  const children: ChildProcess[] = [];
  t.after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    // Should the test fail, do not leave the agent's group (which the SIGKILL did not reach) running.
    for (const f of [leaderFile, pidFile]) {
      try {
        process.kill(Number(readFileSync(f, 'utf8')), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const first = await serve(dataDir);
  children.push(first.child);
  const key = readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
  const call = async (url: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as Record<string, any>;
  };

  const files = [
    { path: 'factory.yaml', text: 'name: recovery\n' },
    { path: 'environments/sleeper.yaml', text: JSON.stringify({ agent: { command: ['/bin/sh', '-c', `echo $$ > '${leaderFile}'; sleep 300 & echo $! > '${pidFile}'; wait`] } }) },
    { path: 'environments/ok.yaml', text: JSON.stringify({ agent: { command: ['node', path.join(ROOT, 'examples/agents/scripted-agent.mjs')] } }) },
  ];
  const { snapshot } = compile(files);
  assert.ok(snapshot);
  await call(first.url, '/api/v1/factories/recovery/apply', { snapshot });

  const long = await call(first.url, '/api/v1/agent/runs', { prompt: 'sleep', config: { environment_id: 'sleeper' } });
  await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'the agent to start');
  const queued = await call(first.url, '/api/v1/agent/runs', { prompt: 'after the crash', config: { environment_id: 'ok' } });
  assert.equal(queued.state, 'QUEUED');

  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));
  const agentPid = Number(readFileSync(leaderFile, 'utf8'));
  const sleepPid = Number(readFileSync(pidFile, 'utf8'));
  // The agent's group outlived the runtime: it leads its own group, which the SIGKILL did not reach.
  assert.equal(isGone(agentPid) || isGone(sleepPid), false);

  const second = await serve(dataDir);
  children.push(second.child);
  // Restart recovery killed the recorded group: the agent and its grandchild are gone.
  await waitFor(() => isGone(agentPid) && isGone(sleepPid), 'the orphaned agent and its sleep to be gone');
  const crashed = await call(second.url, `/api/v1/agent/runs/${long.run_id}`);
  assert.deepEqual(
    [crashed.state, crashed.retryable, crashed.error_code, crashed.status_message],
    ['ERROR', true, 'runtime_stopped', 'the runtime stopped while the run was in progress'],
  );
  let next: Record<string, any> = {};
  for (let i = 0; i < 400 && !['SUCCEEDED', 'FAILED', 'ERROR'].includes(next.state); i++) {
    next = await call(second.url, `/api/v1/agent/runs/${queued.run_id}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(next.state, 'SUCCEEDED', JSON.stringify(next));

  second.child.kill('SIGTERM');
  await new Promise((r) => second.child.once('exit', r));
});
