/** Scratch directories, a small local git repo to clone, and a job runner that collects events. */

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, type ExecutorKind } from '../../../runtime/config.ts';
import { runJob, type JobOptions, type JobResult, type JobSpec, type TranscriptEventInput } from '../../../runtime/executor/job.ts';
import { isolationOf, probeIsolation, type Isolation } from '../../../runtime/executor/sandbox.ts';

export const AGENTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../examples/agents');

export function scratch(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'factory-exec-'));
  // A direct run as root runs as another user (65534), who must pass through to its workspace.
  chmodSync(dir, 0o711);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The isolation a runtime with data dir `<dir>/data` would use, with the example agents readable
 * (the operator's --sandbox-ro-bind for an agent installation).
 */
export function isolation(dir: string, executor: ExecutorKind = 'sandbox', flags: Parameters<typeof parseConfig>[0] = {}): Isolation {
  // Local repos: the tests' own, made under the system's temp directory.
  return isolationOf(parseConfig({ dataDir: path.join(dir, 'data'), executor, sandboxRoBind: [AGENTS], localRepos: [os.tmpdir()], ...flags }, {}));
}

let fallbackSaid = false;

/**
 * The executor of test runtimes: the sandbox (the default); where it cannot run and CI is not
 * set, direct, said once in one line, so the rest of the suite still runs on a laptop.
 */
export function testExecutor(): ExecutorKind {
  const skip = sandboxSkip();
  if (!skip) return 'sandbox';
  if (!fallbackSaid) process.stderr.write(`test runtimes use --executor direct: ${skip}\n`);
  fallbackSaid = true;
  return 'direct';
}

/**
 * Whether the sandbox can run here. Outside CI a missing bubblewrap skips its tests with one line
 * saying how to get it; with CI=true it is a failure, so CI never passes by skipping.
 */
export function sandboxSkip(): string | false {
  const problem = probeIsolation(isolation(os.tmpdir()));
  if (!problem) return false;
  if (process.env.CI === 'true') throw new Error(`CI=true and the sandbox cannot run: ${problem.what}; ${problem.fix}`);
  return `needs the sandbox: ${problem.what}; ${problem.fix}`;
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
    network: 'none',
    prompt: 'Fix the bug.\nThen say so.\n',
    attachments: [],
    ...rest,
    agent: { command: ['node', path.join(AGENTS, 'scripted-agent.mjs')], format: 'text', timeoutMs: 60_000, ...agent },
  };
}

export async function run(
  s: JobSpec,
  opts: {
    signal?: AbortSignal;
    caps?: Parameters<typeof runJob>[1]['caps'];
    inheritedEnv?: Readonly<Record<string, string>>;
    onGroup?: JobOptions['onGroup'];
    /** Default: the sandbox, as a runtime with data dir `<workspace>/../data` would use it. */
    isolation?: Isolation;
    /** Between two measures of the workspace's disk use (the job's default otherwise). */
    diskCheckMs?: number;
  } = {},
): Promise<{ result: JobResult; events: TranscriptEventInput[]; output: string }> {
  const events: TranscriptEventInput[] = [];
  const result = await runJob(s, {
    signal: opts.signal ?? new AbortController().signal,
    onEvent: (e) => events.push(e),
    caps: opts.caps,
    // What the runtime would pass: config.inheritedEnv of this test process's environment.
    inheritedEnv: opts.inheritedEnv ?? parseConfig({}, process.env).inheritedEnv,
    onGroup: opts.onGroup,
    isolation: opts.isolation ?? isolation(path.dirname(s.workspaceDir)),
    diskCheckMs: opts.diskCheckMs,
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

/** Host pids of live processes whose argv, joined by spaces, is exactly `command` (e.g. `sleep 3141`). */
export function processesWith(command: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0$/, '').split('\0').join(' ');
      if (argv === command && !isGone(Number(name))) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Host pids of live processes that carry `FACTORY_RUN_ID=<runId>` (every process of a run does). */
export function processesOfRun(runId: string): number[] {
  const marker = Buffer.from(`FACTORY_RUN_ID=${runId}\0`);
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`);
      const at = environ.indexOf(marker);
      if ((at === 0 || (at > 0 && environ[at - 1] === 0)) && !isGone(Number(name))) found.push(Number(name));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}
