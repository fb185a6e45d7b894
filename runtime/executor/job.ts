/**
 * One run, from an empty workspace to a final state (docs/runs.md), independent of the store: the
 * pool resolves secrets, persists the events this reports through `onEvent` and owns the run's
 * state. `state` transcript events are written by the pool (one place), never here.
 *
 * Steps: create the workspace; clone (or copy) the repos; write the attachments and `prompt.md`;
 * run each setup command with `/bin/sh -c`; run the agent (argv, no shell) with the prompt on
 * stdin; then report the files changed in each cloned repo. Each command leads its own process
 * group, so timeout and cancel stop everything it started, and every one of them, the git
 * commands before and after included, runs under the run's isolation (sandbox.ts): a repo's own
 * git config could otherwise run code outside it.
 *
 * A failure of the run's own inputs (a repo, a setup command, the agent) is FAILED; cancel is
 * CANCELLED. A failure of the platform itself (the workspace cannot be created or written) is
 * thrown, and the pool records it as ERROR.
 */

import { chmod, lchown, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AgentFormat, NetworkPolicy } from '../../core/snapshot.ts';
import { CANCELLED_END, type RunErrorCode } from '../../core/run-state.ts';
import { AgentOutput } from './agent-output.ts';
import { formatDuration } from '../../core/duration.ts';
import type { GroupExit } from './process.ts';
import { DISK_CHECK_MS, watchDisk, type DiskUsage } from './disk.ts';
import { readerFor } from './readers.ts';
import { RunSandbox, type Isolation } from './sandbox.ts';
import { DEFAULT_CAPS, type TranscriptCaps, type TranscriptEventInput } from './transcript.ts';
import { parsePorcelainZ, planRepo, runCaptured, writeInputs, type CommandRun, type RepoCommand } from './workspace.ts';

export type { TranscriptEventInput } from './transcript.ts';

export interface JobSpec {
  runId: string;
  /** Absolute path; created if missing. */
  workspaceDir: string;
  repos: { url: string; ref?: string; path?: string }[];
  setup: string[];
  agent: { command: string[]; format: AgentFormat; timeoutMs: number };
  /** The environment's variables, secrets already resolved. */
  env: Record<string, string>;
  /** `none`: the sandboxed setup and agent have loopback only (the default). Direct runs ignore it. */
  network: NetworkPolicy;
  prompt: string;
  attachments: { name: string; bytes: Buffer }[];
}

export interface JobResult {
  state: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  statusMessage?: string;
  errorCode?: RunErrorCode;
  /** Whether the agent process was started (a FAILED run that started gets a session link). */
  agentStarted: boolean;
}

export interface JobOptions {
  signal: AbortSignal;
  onEvent: (e: TranscriptEventInput) => void;
  caps?: Partial<TranscriptCaps>;
  /**
   * The runtime's variables (config.inheritedEnv): direct commands inherit them all, sandboxed ones
   * only the locale and time zone; nothing else of the runtime's environment is inherited.
   */
  inheritedEnv: Readonly<Record<string, string>>;
  /** Where commands run: the sandbox or direct, as which user, what stays hidden (isolationOf). */
  isolation: Isolation;
  /** Told each command's process group as it starts and ends (see runInGroup), to record it. */
  onGroup?: (event: 'start' | 'end', pgid: number) => void;
  /** Between two measures of the workspace's disk use (DISK_CHECK_MS; tests use less). */
  diskCheckMs?: number;
}

const CANCELLED: JobResult = { state: 'CANCELLED', ...CANCELLED_END, agentStarted: false };

/** "exit code 3" / "signal SIGKILL" for messages. */
function exitText(e: GroupExit): string {
  return e.code !== null ? `exit code ${e.code}` : `signal ${e.signal ?? 'unknown'}`;
}

/**
 * Runs one job; resolves with its outcome, rejects only on a platform failure. With a disk limit
 * (`isolation.sandbox.diskMb`, docs/security.md#limits), the workspace is measured while the steps
 * run and once after them: past the limit, the steps are stopped as a cancel stops them, and the
 * run fails with `workspace_too_large` (a cancel of its own that came first stays a cancel).
 */
export async function runJob(spec: JobSpec, opts: JobOptions): Promise<JobResult> {
  const limitMb = opts.isolation.sandbox.diskMb;
  if (!limitMb) return runSteps(spec, opts);
  const quota = new AbortController();
  let over: DiskUsage | undefined;
  const watch = watchDisk(path.resolve(spec.workspaceDir), limitMb * MIB, opts.diskCheckMs ?? DISK_CHECK_MS, (usage) => {
    over = usage;
    quota.abort();
  });
  let result: JobResult;
  try {
    result = await runSteps(spec, { ...opts, signal: AbortSignal.any([opts.signal, quota.signal]) });
    if (over === undefined && !opts.signal.aborted) await watch.final();
  } finally {
    watch.stop();
  }
  if (over === undefined || opts.signal.aborted) return result;
  const found: DiskUsage = over;
  return {
    state: 'FAILED',
    statusMessage:
      found.failed !== undefined
        ? `the workspace's disk use could not be measured: ${found.failed} (a run may take ${limitMb} MiB, --sandbox-disk-mb)`
        : found.unreadable !== undefined
          ? `the workspace's disk use could not be measured: the runtime cannot read its directory ${found.unreadable} (a run may take ${limitMb} MiB, --sandbox-disk-mb)`
          : `the workspace took ${Math.ceil(found.bytes / MIB)} MiB of disk, more than the ${limitMb} MiB a run may take (--sandbox-disk-mb)`,
    errorCode: 'workspace_too_large',
    agentStarted: result.agentStarted,
  };
}

const MIB = 1024 * 1024;

/** The steps of a job, from an empty workspace to its outcome (see the module comment). */
async function runSteps(spec: JobSpec, opts: JobOptions): Promise<JobResult> {
  const caps: TranscriptCaps = { ...DEFAULT_CAPS, ...opts.caps };
  const { signal, onEvent, onGroup } = opts;
  const ws = path.resolve(spec.workspaceDir);
  const sandbox = new RunSandbox(opts.isolation, ws);
  const runAs = opts.isolation.runAs;
  // The run's own three FACTORY_* variables (the agent protocol, and the marker crash recovery
  // looks for in /proc); no other FACTORY_* variable of the runtime's ever reaches a command.
  const env: Record<string, string> = {
    ...sandbox.baseEnv(opts.inheritedEnv),
    ...spec.env,
    FACTORY_PROMPT_FILE: path.posix.join(sandbox.workspaceInside, 'prompt.md'),
    FACTORY_WORKSPACE: sandbox.workspaceInside,
    FACTORY_RUN_ID: spec.runId,
  };
  const network = spec.network === 'open';
  // git never waits for a password on a terminal nobody is watching.
  const gitEnv = { ...env, GIT_TERMINAL_PROMPT: '0' };
  const repoEnv = { ...gitEnv, ...sandbox.repoEnv() };
  const timeoutMs = spec.agent.timeoutMs;
  // Repo and setup commands share one output budget, so many commands cannot grow the transcript
  // past a few MB (docs/runs.md).
  let commandBudget = caps.commandOutputBytesTotal;
  const captured = async (c: RepoCommand, cmdEnv: Record<string, string>) => {
    const r = await runCaptured(sandbox, { ...c, env: cmdEnv, signal, timeoutMs, onGroup }, Math.min(caps.commandOutputBytes, commandBudget));
    commandBudget = Math.max(0, commandBudget - Buffer.byteLength(r.output));
    return r;
  };

  const commandEvent = (phase: string, text: string, r: CommandRun, argv?: string[]) =>
    onEvent({
      type: 'command',
      data: {
        phase,
        ...(argv ? { argv } : {}),
        text,
        exit_code: r.code,
        ...(r.signal ? { signal: r.signal } : {}),
        ...(r.timedOut ? { timed_out: true } : {}),
        duration_ms: r.durationMs,
        output: r.output,
        ...(r.truncated ? { output_truncated: true } : {}),
      },
    });

  if (signal.aborted) return CANCELLED;
  await mkdir(ws, { recursive: true, mode: 0o700 });
  await chmod(ws, 0o700);
  // The run's own HOME, in its workspace, so what setup leaves there the agent finds.
  const home = sandbox.homeDir;
  if (home) await mkdir(home, { recursive: true, mode: 0o700 });
  // Commands run as runAs when the runtime is root: the workspace is theirs; the runtime, root,
  // still reads and removes it. Never a chown that follows a symlink (see writeInputs).
  if (runAs) for (const dir of home ? [ws, home] : [ws]) await lchown(dir, runAs.uid, runAs.gid);

  // 1. Repos.
  const gitDirs: { rel: string; dir: string }[] = [];
  for (const repo of spec.repos) {
    let plan;
    try {
      plan = await planRepo(sandbox, repo, repoEnv, { signal, onGroup });
    } catch (err) {
      return { state: 'FAILED', statusMessage: (err as Error).message, errorCode: 'repo_failed', agentStarted: false };
    }
    if (signal.aborted) return CANCELLED;
    if (plan.kind === 'copy') {
      const r = await captured(plan.command, repoEnv);
      commandEvent('repo', `copy ${plan.from} ${path.relative(ws, plan.target)}`, r);
      if (r.cancelled) return CANCELLED;
      if (r.spawnError || r.code !== 0) {
        const why = r.spawnError?.code ?? (r.output.trim().split('\n')[0] || exitText(r));
        return { state: 'FAILED', statusMessage: `copying repo ${repo.url} (${plan.from}) into the workspace failed: ${why}`, errorCode: 'repo_failed', agentStarted: false };
      }
      continue;
    }
    for (const c of plan.commands) {
      const r = await captured(c, repoEnv);
      commandEvent('repo', c.argv.join(' '), r, c.argv);
      if (r.cancelled) return CANCELLED;
      if (r.spawnError) {
        return { state: 'FAILED', statusMessage: `git could not be started (${r.spawnError.code}), so repo ${repo.url} was not cloned`, errorCode: 'repo_failed', agentStarted: false };
      }
      if (r.code !== 0) {
        const what = c.argv[1] === 'checkout' ? `checking out ref "${repo.ref}" of ${repo.url}` : `cloning ${repo.url}`;
        const why = r.timedOut ? `timed out after ${formatDuration(timeoutMs)}` : `failed with ${exitText(r)}`;
        return { state: 'FAILED', statusMessage: `${what} ${why}`, errorCode: 'repo_failed', agentStarted: false };
      }
    }
    gitDirs.push({ rel: path.relative(ws, plan.target), dir: plan.target });
  }

  // 2. Inputs.
  try {
    await writeInputs(ws, spec.prompt, spec.attachments, runAs);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code) throw err;
    return { state: 'FAILED', statusMessage: (err as Error).message, errorCode: 'repo_failed', agentStarted: false };
  }

  // 3. Setup commands, each with the agent's timeout as its own limit.
  for (const command of spec.setup) {
    const r = await captured({ argv: ['/bin/sh', '-c', command], cwd: ws, network, sources: [] }, env);
    commandEvent('setup', command, r);
    if (r.cancelled) return CANCELLED;
    if (r.spawnError) throw r.spawnError;
    if (r.code !== 0) {
      const why = r.timedOut ? `timed out after ${formatDuration(timeoutMs)}` : `failed with ${exitText(r)}`;
      return { state: 'FAILED', statusMessage: `setup command "${command}" ${why}`, errorCode: 'setup_failed', agentStarted: false };
    }
  }

  // 4. The agent.
  const program = spec.agent.command[0];
  const out = new AgentOutput(readerFor(spec.agent.format, caps.lineBytes), caps, onEvent);
  const exit = await sandbox.run({
    argv: spec.agent.command,
    cwd: ws,
    env,
    network,
    stdin: spec.prompt,
    timeoutMs,
    signal,
    onGroup,
    onStdout: (c) => out.write('stdout', c),
    onStderr: (c) => out.write('stderr', c),
  });
  out.end();
  const started = !exit.spawnError;
  onEvent({
    type: 'command',
    data: {
      phase: 'agent',
      argv: spec.agent.command,
      text: spec.agent.command.join(' '),
      exit_code: exit.code,
      ...(exit.signal ? { signal: exit.signal } : {}),
      ...(exit.timedOut ? { timed_out: true } : {}),
      ...(exit.spawnError ? { error: exit.spawnError.code } : {}),
      duration_ms: exit.durationMs,
    },
  });
  if (exit.cancelled) return { ...CANCELLED, agentStarted: started };

  // 5. Files changed, whatever the agent's outcome: they help to debug a failed run too.
  if (started) await reportChanges(sandbox, gitDirs, gitEnv, caps, onEvent, { onGroup, signal });
  if (signal.aborted) return { ...CANCELLED, agentStarted: started };

  if (exit.spawnError) {
    const code = exit.spawnError.code;
    if (code === 'ENOENT') {
      return { state: 'FAILED', statusMessage: `agent program "${program}" was not found`, errorCode: 'agent_not_found', agentStarted: false };
    }
    return { state: 'FAILED', statusMessage: `agent program "${program}" could not be started (${code})`, errorCode: 'agent_not_found', agentStarted: false };
  }
  if (exit.timedOut) {
    return { state: 'FAILED', statusMessage: `agent timed out after ${formatDuration(timeoutMs)}`, errorCode: 'agent_timeout', agentStarted: true };
  }
  if (exit.code !== 0) {
    return { state: 'FAILED', statusMessage: `agent exited with ${exitText(exit)}`, errorCode: 'agent_failed', agentStarted: true };
  }
  return { state: 'SUCCEEDED', agentStarted: true };
}

/**
 * Longest one `git status` or `git diff` of the change report may take. The agent may have
 * configured the repo (`core.fsmonitor`, filters, diff drivers) to run commands, so these git
 * commands are bounded like every other command of a run, and end with it when it is cancelled.
 */
export const REPORT_COMMAND_TIMEOUT_MS = 120_000;
/** Longest the whole change report may take; past it, the files left are listed without a diff. */
export const REPORT_TOTAL_MS = 600_000;

/**
 * The longest a job can take by its own limits: every repo step (at most three commands a repo),
 * every setup command and the agent each get the agent's timeout, then the change report. The
 * runtime holds a remote worker's run to it (store/leases.ts), whatever the worker does.
 */
export function jobTimeLimitMs(job: Pick<JobSpec, 'repos' | 'setup' | 'agent'>): number {
  return (3 * job.repos.length + job.setup.length + 1) * job.agent.timeoutMs + REPORT_TOTAL_MS;
}

/**
 * `file_change` events from `git status` in each cloned repo, each with a capped diff. git is told
 * to run none of the repo's own helpers it can be told to skip (fsmonitor, external diff,
 * textconv); what is left (filters) is bounded by the timeout.
 */
async function reportChanges(
  sandbox: RunSandbox,
  repos: { rel: string; dir: string }[],
  env: Record<string, string>,
  caps: TranscriptCaps,
  onEvent: (e: TranscriptEventInput) => void,
  { onGroup, signal }: { onGroup: JobOptions['onGroup']; signal: AbortSignal },
): Promise<void> {
  const until = performance.now() + REPORT_TOTAL_MS;
  const left = () => Math.min(REPORT_COMMAND_TIMEOUT_MS, Math.floor(until - performance.now()));
  const bounded = () => ({ env, network: false, onGroup, signal, timeoutMs: left() });
  let count = 0;
  let diffBudget = caps.diffBytesTotal;
  for (const repo of repos) {
    if (signal.aborted) return;
    if (left() <= 0) {
      onEvent({ type: 'file_change', data: { repo: repo.rel, truncated: true, message: `the change report took more than ${REPORT_TOTAL_MS / 60_000} minutes` } });
      return;
    }
    const status = await runCaptured(sandbox, { argv: ['git', '-c', 'core.fsmonitor=false', 'status', '--porcelain=v1', '-z', '--untracked-files=all'], cwd: repo.dir, ...bounded() }, 4 * 1024 * 1024);
    if (status.code !== 0) continue;
    for (const change of parsePorcelainZ(status.output)) {
      if (count++ >= caps.maxFileChanges) {
        onEvent({ type: 'file_change', data: { repo: repo.rel, truncated: true, message: `more than ${caps.maxFileChanges} files changed` } });
        return;
      }
      let diff = '';
      let diffTruncated = false;
      const cap = Math.min(caps.diffBytesPerFile, diffBudget);
      if (cap > 0 && left() > 0) {
        const git = ['git', '-c', 'core.fsmonitor=false', 'diff', '--no-color', '--no-ext-diff', '--no-textconv'];
        const argv = change.untracked
          ? [...git, '--no-index', '--', '/dev/null', change.path]
          : [...git, '-M', 'HEAD', '--', ...(change.oldPath ? [change.oldPath] : []), change.path];
        const d = await runCaptured(sandbox, { argv, cwd: repo.dir, ...bounded() }, cap);
        if (signal.aborted) return;
        diff = d.output;
        diffTruncated = d.truncated;
        diffBudget -= Buffer.byteLength(diff);
      } else diffTruncated = true;
      onEvent({
        type: 'file_change',
        data: {
          repo: repo.rel,
          path: change.path,
          kind: change.kind,
          ...(change.oldPath ? { old_path: change.oldPath } : {}),
          diff,
          ...(diffTruncated ? { diff_truncated: true } : {}),
        },
      });
    }
  }
}
