/**
 * Child processes for the executor (docs/runs.md): every command runs in its own process group
 * (`detached: true`, so its pid is the group id) and is stopped as a group, so a grandchild
 * (`sleep`, a dev server, a shell pipeline) never outlives its run.
 */

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** How long a group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;
/** How long output may still arrive once a command's leader has exited. */
export const PIPE_DRAIN_MS = 2_000;

export interface GroupSpawn {
  /** argv (no shell); use ['/bin/sh', '-c', text] for shell text. */
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /**
   * Told the group id once the command runs ('start') and once it and its group are gone ('end'),
   * so the pool can record it: a runtime killed by SIGKILL cannot stop its groups, and a restart
   * uses the record to do it (killOrphanGroup).
   */
  onGroup?: (event: 'start' | 'end', pgid: number) => void;
  /**
   * Opens fd 3 as a pipe on which a launcher (runtime/executor/sandbox.ts) writes `ENOENT` or
   * `EACCES` when it cannot start the program, so a wrapped command still reports the same
   * spawnError as a program started directly.
   */
  statusFd?: boolean;
  /**
   * Written to fd 4, a pipe, then closed: the command's variables as shell `export` lines, which
   * the launcher (sandbox.ts) reads and applies once it runs as the run's user inside its
   * isolation. The wrapper programs before it (bubblewrap, setpriv) are started with `env`, which
   * is then a fixed, minimal set: never the run's own variables.
   */
  envScript?: string;
  /**
   * Written to fd `SECCOMP_FD`, a pipe, then closed: the system-call filter bubblewrap reads
   * (`--seccomp`, runtime/executor/seccomp.ts) and closes before it starts the command.
   */
  seccomp?: Buffer;
}

/** The descriptor a sandboxed command's bubblewrap reads its system-call filter from. */
export const SECCOMP_FD = 5;

export interface GroupExit {
  /** Exit code, or null when killed by a signal or never started. */
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Set when the program could not be started (ENOENT, EACCES, ...). */
  spawnError?: NodeJS.ErrnoException;
  durationMs: number;
}

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // ESRCH: the whole group is already gone.
  }
}

/**
 * Runs one command as the leader of a new process group and resolves when it has exited and its
 * output is drained. Timeout and abort send SIGTERM to the group, then SIGKILL after a grace
 * period. When the leader exits on its own, leftovers of its group are killed too.
 */
export function runInGroup(opts: GroupSpawn): Promise<GroupExit> {
  const started = performance.now();
  return new Promise((resolve) => {
    let timedOut = false;
    let cancelled = false;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    let graceTimer: NodeJS.Timeout | undefined;

    const finish = (r: Omit<GroupExit, 'timedOut' | 'cancelled' | 'durationMs'>) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({ ...r, timedOut, cancelled, durationMs: Math.round(performance.now() - started) });
    };

    if (opts.signal?.aborted) {
      cancelled = true;
      finish({ code: null, signal: null });
      return;
    }

    const [program, ...args] = opts.argv;
    // fd 3: the launcher's status, fd 4: the command's variables, fd 5: the filter; 'ignore' (/dev/null) fills a gap.
    const stdio: ('pipe' | 'ignore')[] = ['pipe', 'pipe', 'pipe'];
    const extra = [opts.statusFd, opts.envScript !== undefined, opts.seccomp !== undefined];
    const last = extra.lastIndexOf(true);
    for (let i = 0; i <= last; i++) stdio.push(extra[i] ? 'pipe' : 'ignore');
    const child = spawn(program, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio });
    // First: a spawn that fails is an 'error' event, which with no listener would end the process.
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) finish({ code: null, signal: null, spawnError: err });
    });
    // Out of file descriptors (EMFILE, ENFILE): Node gives up before it makes the pipes, and the
    // 'error' above ends the command.
    if (!child.stdio) return;
    if (opts.envScript !== undefined) {
      const pipe = child.stdio[4] as NodeJS.WritableStream | null;
      // A command that never reads it (one that failed to start) closes it early: not our failure.
      pipe?.on('error', () => {});
      pipe?.end(opts.envScript);
    }
    if (opts.seccomp !== undefined) {
      const pipe = (child.stdio as unknown as (NodeJS.WritableStream | null)[])[SECCOMP_FD];
      // bubblewrap that failed before reading it closes it early: its exit status says why.
      pipe?.on('error', () => {});
      pipe?.end(opts.seccomp);
    }
    let status = '';
    if (opts.statusFd) {
      const pipe = child.stdio[3] as NodeJS.ReadableStream | null;
      pipe?.on('data', (c: Buffer) => (status = (status + c.toString('latin1')).slice(0, 64)));
      pipe?.on('error', () => {});
    }

    const stop = () => {
      if (child.pid === undefined) return;
      const pid = child.pid;
      killGroup(pid, 'SIGTERM');
      graceTimer = setTimeout(() => killGroup(pid, 'SIGKILL'), KILL_GRACE_MS);
      graceTimer.unref();
    };
    function onAbort() {
      if (settled) return;
      cancelled = true;
      stop();
    }
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        timedOut = true;
        stop();
      }, opts.timeoutMs);
    }

    if (child.pid !== undefined) opts.onGroup?.('start', child.pid);
    // The first three are pipes (stdio above), so never null.
    child.stdout!.on('data', (c: Buffer) => opts.onStdout?.(c));
    child.stderr!.on('data', (c: Buffer) => opts.onStderr?.(c));
    // A program that does not read its stdin closes the pipe early; that is not our failure.
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.stdin ?? '');

    child.on('exit', () => {
      // The leader is gone; anything it left in its group (background jobs) goes with it, so the
      // pipes close and 'close' fires.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
      // A process that left the group (setsid: only the sandbox's PID namespace ends those) may
      // hold the output pipes open for ever: after a grace the command is over all the same, so
      // its run ends, is cancelled or times out as it should (docs/security.md#executors).
      const drain = setTimeout(() => {
        for (const stream of child.stdio) stream?.destroy();
      }, PIPE_DRAIN_MS);
      drain.unref();
      child.once('close', () => clearTimeout(drain));
    });
    child.on('close', (code, signal) => {
      if (graceTimer) clearTimeout(graceTimer);
      if (child.pid !== undefined) opts.onGroup?.('end', child.pid);
      const reported = /^(ENOENT|EACCES)$/m.exec(status)?.[1];
      if (reported) {
        const spawnError: NodeJS.ErrnoException = Object.assign(new Error(`${program}: ${reported}`), { code: reported });
        finish({ code: null, signal: null, spawnError });
        return;
      }
      finish({ code, signal });
    });
  });
}

/** What a restart found of a group recorded by the previous process (killOrphanGroup). */
export type OrphanOutcome = 'killed' | 'gone' | 'unverified';

/** `/proc/<pid>/stat` → the process group id, or undefined when unreadable. */
function pgidOf(pid: string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parens): state ppid pgrp ...
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[2]);
  } catch {
    return undefined;
  }
}

/**
 * Kills (SIGKILL) every process group one of whose live members carries run `runId`'s marker
 * (killOrphanGroup says why that proves it is the run's): for a worker that died without a record
 * of the groups it started. Returns how many groups were killed; 0 without Linux's /proc.
 */
export function killRunGroups(runId: string): number {
  const pids = procPids();
  if (!pids) return 0;
  const marker = runMarker(runId);
  const groups = new Set<number>();
  for (const pid of pids) {
    const pgid = carriesRun(pid, marker) ? pgidOf(pid) : undefined;
    if (pgid !== undefined && pgid > 1 && pgid !== process.pid) groups.add(pgid);
  }
  for (const pgid of groups) killGroup(pgid, 'SIGKILL');
  return groups.size;
}

/** The ids of the live processes, or undefined without Linux's /proc. */
function procPids(): string[] | undefined {
  try {
    return readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return undefined;
  }
}

/** The environment entry every process of run `runId` starts with (its terminating NUL included). */
const runMarker = (runId: string) => Buffer.from(`FACTORY_RUN_ID=${runId}\0`);

/** Whether process `pid` started with `marker` as one whole entry of its environment (not a suffix of another). */
function carriesRun(pid: string, marker: Buffer): boolean {
  let environ: Buffer;
  try {
    environ = readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false;
  }
  const at = environ.indexOf(marker);
  return at === 0 || (at > 0 && environ[at - 1] === 0);
}

/**
 * Kills (SIGKILL) a process group that a previous runtime process recorded for run `runId` and
 * could not stop because it died (docs/runs.md: nothing outlives its run). Group ids are reused
 * once a group is gone, so the group is killed only when one of its live members carries the run's
 * own marker `FACTORY_RUN_ID=<runId>` in its initial environment (`/proc/<pid>/environ`): every
 * process of a run starts with it, and run ids are random, so an unrelated group never matches.
 *
 * Limits: needs Linux's /proc ('unverified' elsewhere, and nothing is killed); a group whose
 * every member replaced its environment (e.g. `env -i`) or runs as another user is not
 * recognised and is left alone ('unverified').
 */
export function killOrphanGroup(pgid: number, runId: string): OrphanOutcome {
  if (!Number.isInteger(pgid) || pgid <= 1) return 'gone';
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    // ESRCH: no process is left in the group. EPERM: the group is not ours to signal.
    return (err as NodeJS.ErrnoException).code === 'ESRCH' ? 'gone' : 'unverified';
  }
  const pids = procPids();
  if (!pids) return 'unverified';
  const marker = runMarker(runId);
  for (const pid of pids) {
    if (pgidOf(pid) === pgid && carriesRun(pid, marker)) {
      killGroup(pgid, 'SIGKILL');
      return 'killed';
    }
  }
  return 'unverified';
}
