/** A runtime with environments applied through the real plan/apply API, and run polling. */

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { compile } from '../../../cli/compiler/compile.ts';
import type { TestRuntime } from '../helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

export const AGENTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../examples/agents');

/** A git repo with one commit, to clone. */
export function makeRepo(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-repo-'));
  // Readable by the run's user: the runtime, as root, runs commands as another user (65534).
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(path.join(dir, 'README.md'), '# app\n');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: dir, stdio: 'pipe' });
  git('init', '--quiet');
  git('add', '.');
  git('commit', '--quiet', '-m', 'init');
  return dir;
}

/** Compiles `environments/<name>.yaml` texts into a snapshot and applies it as factory `tests`. */
export async function applyEnvironments(rt: TestRuntime, envs: Record<string, string>, factory = 'tests'): Promise<void> {
  const files = [{ path: 'factory.yaml', text: `name: ${factory}\n` }, ...Object.entries(envs).map(([name, text]) => ({ path: `environments/${name}.yaml`, text }))];
  const { snapshot, diagnostics } = compile(files);
  if (!snapshot) throw new Error(`environments do not compile: ${JSON.stringify(diagnostics)}`);
  const res = await rt.fetch(`/api/v1/factories/${factory}/apply`, { method: 'POST', json: { snapshot } });
  if (res.status !== 200) throw new Error(`apply failed: ${res.status} ${await res.text()}`);
}

export function envYaml(opts: { command: string[]; repo?: string; setup?: string[]; timeout?: string; env?: Record<string, unknown>; format?: string }): string {
  return JSON.stringify({
    ...(opts.repo ? { repos: [{ url: opts.repo, path: 'app' }] } : {}),
    setup: opts.setup ?? [],
    agent: { command: opts.command, timeout: opts.timeout ?? '1m', ...(opts.format ? { format: opts.format } : {}) },
    ...(opts.env ? { env: opts.env } : {}),
  });
}

/** Polls a run until `done(run)` (bounded), returning the last run seen. */
export async function waitForRun(
  rt: { fetch: TestRuntime['fetch'] },
  runId: string,
  done: (run: Record<string, any>) => boolean = (r) => !['QUEUED', 'INPROGRESS'].includes(r.state),
  tries = 600,
): Promise<Record<string, any>> {
  return eventually(async () => (await (await rt.fetch(`/api/v1/agent/runs/${runId}`)).json()) as Record<string, any>, `run ${runId}`, {
    until: done,
    tries,
  });
}

export async function createRun(rt: TestRuntime, body: unknown, init: { key?: string | null; headers?: Record<string, string> } = {}) {
  const res = await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: body, ...init });
  return { res, body: (await res.json()) as Record<string, any> };
}

/** Applies one environment `ok` running `env`, creates a run on it and waits until it SUCCEEDED; returns its id. */
export async function succeededRun(rt: TestRuntime, env: Parameters<typeof envYaml>[0]): Promise<string> {
  await applyEnvironments(rt, { ok: envYaml(env) });
  const { res, body } = await createRun(rt, { prompt: 'Say hi', config: { environment_id: 'ok' } });
  assert.equal(res.status, 201);
  const runId = body.run_id as string;
  assert.equal((await waitForRun(rt, runId)).state, 'SUCCEEDED');
  return runId;
}
