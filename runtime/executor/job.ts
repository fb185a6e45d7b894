/**
 * One run, from an empty workspace to a final state (SPEC 9), independent of the store: the pool
 * resolves secrets, persists the events this reports through `onEvent` and owns the run's state.
 * `state` transcript events are written by the pool (one place), never here.
 *
 * Steps: create the workspace; clone (or copy) the repos; write the attachments and `prompt.md`;
 * run each setup command with `/bin/sh -c`; run the agent (argv, no shell) with the prompt on
 * stdin; then report the files changed in each cloned repo. Each command leads its own process
 * group, so timeout and cancel stop everything it started.
 *
 * A failure of the run's own inputs (a repo, a setup command, the agent) is FAILED; cancel is
 * CANCELLED. A failure of the platform itself (the workspace cannot be created or written) is
 * thrown, and the pool records it as ERROR.
 */

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AgentFormat } from '../../core/snapshot.ts';
import type { RunErrorCode } from '../../core/run-state.ts';
import { AgentOutput } from './agent-output.ts';
import { formatDuration } from './duration.ts';
import { runInGroup, type GroupExit } from './process.ts';
import { readerFor } from './readers.ts';
import { DEFAULT_CAPS, type TranscriptCaps, type TranscriptEventInput } from './transcript.ts';
import { copyDir, parsePorcelainZ, planRepo, runCaptured, writeInputs, type CommandRun } from './workspace.ts';

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
  /** The runtime's variables every command inherits (config.inheritedEnv); nothing else is inherited. */
  inheritedEnv: Readonly<Record<string, string>>;
  /** Told each command's process group as it starts and ends (see runInGroup), to record it. */
  onGroup?: (event: 'start' | 'end', pgid: number) => void;
}

const CANCELLED: JobResult = { state: 'CANCELLED', statusMessage: 'the run was cancelled', errorCode: 'cancelled', agentStarted: false };

/** "exit code 3" / "signal SIGKILL" for messages. */
function exitText(e: GroupExit): string {
  return e.code !== null ? `exit code ${e.code}` : `signal ${e.signal ?? 'unknown'}`;
}

/** Runs one job; resolves with its outcome, rejects only on a platform failure. */
export async function runJob(spec: JobSpec, opts: JobOptions): Promise<JobResult> {
  const caps: TranscriptCaps = { ...DEFAULT_CAPS, ...opts.caps };
  const { signal, onEvent, onGroup } = opts;
  const ws = path.resolve(spec.workspaceDir);
  const promptFile = path.join(ws, 'prompt.md');
  const env: Record<string, string> = {
    ...opts.inheritedEnv,
    ...spec.env,
    FACTORY_PROMPT_FILE: promptFile,
    FACTORY_WORKSPACE: ws,
    FACTORY_RUN_ID: spec.runId,
  };
  // git never waits for a password on a terminal nobody is watching.
  const gitEnv = { ...env, GIT_TERMINAL_PROMPT: '0' };
  const timeoutMs = spec.agent.timeoutMs;
  // Repo and setup commands share one output budget, so many commands cannot grow the transcript
  // past a few MB (SPEC 9).
  let commandBudget = caps.commandOutputBytesTotal;
  const captured = async (argv: string[], cwd: string, cmdEnv: Record<string, string>) => {
    const r = await runCaptured(argv, cwd, cmdEnv, Math.min(caps.commandOutputBytes, commandBudget), { signal, timeoutMs, onGroup });
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
  await mkdir(ws, { recursive: true });

  // 1. Repos.
  const gitDirs: { rel: string; dir: string }[] = [];
  for (const repo of spec.repos) {
    let plan;
    try {
      plan = await planRepo(ws, repo, gitEnv);
    } catch (err) {
      return { state: 'FAILED', statusMessage: (err as Error).message, errorCode: 'repo_failed', agentStarted: false };
    }
    if (plan.kind === 'copy') {
      const inside = path.relative(plan.from, ws);
      if (inside === '' || (!inside.startsWith('..') && !path.isAbsolute(inside))) {
        const why = `repo ${repo.url} is the directory ${plan.from}, which holds this run's workspace, so it cannot be copied into it; name a git repository or a directory outside the runtime's data directory`;
        return { state: 'FAILED', statusMessage: why, errorCode: 'repo_failed', agentStarted: false };
      }
      try {
        await copyDir(plan.from, plan.target);
      } catch (err) {
        const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        return { state: 'FAILED', statusMessage: `copying repo ${repo.url} (${plan.from}) into the workspace failed: ${why}`, errorCode: 'repo_failed', agentStarted: false };
      }
      onEvent({ type: 'command', data: { phase: 'repo', text: `copy ${plan.from} ${path.relative(ws, plan.target)}`, exit_code: 0, duration_ms: 0, output: '' } });
      continue;
    }
    for (const c of plan.commands) {
      const r = await captured(c.argv, c.cwd, gitEnv);
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
    await writeInputs(ws, spec.prompt, spec.attachments);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code) throw err;
    return { state: 'FAILED', statusMessage: (err as Error).message, errorCode: 'repo_failed', agentStarted: false };
  }

  // 3. Setup commands, each with the agent's timeout as its own limit.
  for (const command of spec.setup) {
    const r = await captured(['/bin/sh', '-c', command], ws, env);
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
  const exit = await runInGroup({
    argv: spec.agent.command,
    cwd: ws,
    env,
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
  if (started) await reportChanges(gitDirs, gitEnv, caps, onEvent, onGroup);

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

/** `file_change` events from `git status` in each cloned repo, each with a capped diff. */
async function reportChanges(
  repos: { rel: string; dir: string }[],
  env: Record<string, string>,
  caps: TranscriptCaps,
  onEvent: (e: TranscriptEventInput) => void,
  onGroup: JobOptions['onGroup'],
): Promise<void> {
  let count = 0;
  let diffBudget = caps.diffBytesTotal;
  for (const repo of repos) {
    const status = await runCaptured(['git', 'status', '--porcelain=v1', '-z', '--untracked-files=all'], repo.dir, env, 4 * 1024 * 1024, { onGroup });
    if (status.code !== 0) continue;
    for (const change of parsePorcelainZ(status.output)) {
      if (count++ >= caps.maxFileChanges) {
        onEvent({ type: 'file_change', data: { repo: repo.rel, truncated: true, message: `more than ${caps.maxFileChanges} files changed` } });
        return;
      }
      let diff = '';
      let diffTruncated = false;
      const cap = Math.min(caps.diffBytesPerFile, diffBudget);
      if (cap > 0) {
        const argv = change.untracked
          ? ['git', 'diff', '--no-color', '--no-index', '--', '/dev/null', change.path]
          : ['git', 'diff', '--no-color', '-M', 'HEAD', '--', ...(change.oldPath ? [change.oldPath] : []), change.path];
        const d = await runCaptured(argv, repo.dir, env, cap, { onGroup });
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
