/** Scratch directories, a small local git repo to clone, and a job runner that collects events. */

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../../runtime/config.ts';
import { runJob, type JobOptions, type JobResult, type JobSpec, type TranscriptEventInput } from '../../../runtime/executor/job.ts';

export const AGENTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../examples/agents');

export function scratch(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-exec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A git repo with one commit (README.md, src/a.txt) and a branch `feature` adding FEATURE.md. */
export function makeRepo(dir: string): string {
  const repo = path.join(dir, 'origin-app');
  mkdirSync(path.join(repo, 'src'), { recursive: true });
  writeFileSync(path.join(repo, 'README.md'), '# app\n');
  writeFileSync(path.join(repo, 'src/a.txt'), 'one\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...args], { cwd: repo, stdio: 'pipe' });
  git('init', '--quiet');
  git('add', '.');
  git('commit', '--quiet', '-m', 'init');
  git('checkout', '--quiet', '-b', 'feature');
  writeFileSync(path.join(repo, 'FEATURE.md'), 'feature\n');
  git('add', '.');
  git('commit', '--quiet', '-m', 'feature');
  git('checkout', '--quiet', 'main');
  return repo;
}

export function spec(dir: string, over: Omit<Partial<JobSpec>, 'agent'> & { agent?: Partial<JobSpec['agent']> } = {}): JobSpec {
  const { agent, ...rest } = over;
  return {
    runId: 'run_test',
    workspaceDir: path.join(dir, 'ws'),
    repos: [],
    setup: [],
    env: {},
    prompt: 'Fix the bug.\nThen say so.\n',
    attachments: [],
    ...rest,
    agent: { command: ['node', path.join(AGENTS, 'scripted-agent.mjs')], format: 'text', timeoutMs: 60_000, ...agent },
  };
}

export async function run(
  s: JobSpec,
  opts: { signal?: AbortSignal; caps?: Parameters<typeof runJob>[1]['caps']; inheritedEnv?: Readonly<Record<string, string>>; onGroup?: JobOptions['onGroup'] } = {},
): Promise<{ result: JobResult; events: TranscriptEventInput[]; output: string }> {
  const events: TranscriptEventInput[] = [];
  const result = await runJob(s, {
    signal: opts.signal ?? new AbortController().signal,
    onEvent: (e) => events.push(e),
    caps: opts.caps,
    // What the runtime would pass: config.inheritedEnv of this test process's environment.
    inheritedEnv: opts.inheritedEnv ?? parseConfig({}, process.env).inheritedEnv,
    onGroup: opts.onGroup,
  });
  const output = events.filter((e) => e.type === 'output').map((e) => String(e.data.text)).join('');
  return { result, events, output };
}

/** True once `pid` no longer runs (gone, or a zombie nobody has reaped yet). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    // A killed orphan stays a zombie until pid 1 reaps it; it runs no code any more.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

export async function waitFor(cond: () => boolean, what: string, tries = 400, everyMs = 50): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}
