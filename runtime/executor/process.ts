/**
 * Child processes for the executor (SPEC 9): every command runs in its own process group
 * (`detached: true`, so its pid is the group id) and is stopped as a group, so a grandchild
 * (`sleep`, a dev server, a shell pipeline) never outlives its run.
 */

import { spawn } from 'node:child_process';

/** Variables a child inherits from the runtime; nothing else (no keys, no FACTORY_MASTER_KEY). */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'TZ', 'TMPDIR'] as const;

/** How long a group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2_000;

/** The minimal inherited environment: only INHERITED_ENV, taken from `parent`. */
export function minimalEnv(parent: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const v = parent[name];
    if (v !== undefined) env[name] = v;
  }
  return env;
}

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
}

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
    const child = spawn(program, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });

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

    child.stdout.on('data', (c: Buffer) => opts.onStdout?.(c));
    child.stderr.on('data', (c: Buffer) => opts.onStderr?.(c));
    // A program that does not read its stdin closes the pipe early; that is not our failure.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin ?? '');

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) finish({ code: null, signal: null, spawnError: err });
    });
    child.on('exit', () => {
      // The leader is gone; anything it left in its group (background jobs) goes with it, so the
      // pipes close and 'close' fires.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    });
    child.on('close', (code, signal) => {
      if (graceTimer) clearTimeout(graceTimer);
      finish({ code, signal });
    });
  });
}
