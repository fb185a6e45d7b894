import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams, type SpawnOptions } from 'node:child_process';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';

/**
 * The ways tests run the CLI. `runCliInProcess` for a command that runs to its end: `runCli` of
 * cli/main.ts in this process, with the working directory, environment and stdin given through its
 * CliIO (cli/io.ts), so tests may run it concurrently. `execCli` runs the real `bin/factory.js` as a
 * child process, for the few end-to-end smoke tests (the entry, exit codes of the process, signals,
 * the build); `startCli` for a command that keeps running (serve, dev, watch), waited on through its
 * output.
 */

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = resolve(ROOT, 'bin', 'factory.js');

/** The environment of a fresh terminal for a child CLI: no FACTORY_* variables, no CI annotations, no colour. */
export function terminalEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACTORY_') && k !== 'GITHUB_ACTIONS') env[k] = v;
  return { ...env, NO_COLOR: '1', ...extra };
}

export interface CliResult {
  /** The exit code; null when the child ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when `limitMs` passed and the child was killed. */
  killed: boolean;
}

export interface ExecCliOptions {
  /** Working directory; the repo root by default. */
  cwd?: string;
  /** The whole environment of the child; `terminalEnv()` by default. */
  env?: Record<string, string>;
  /** What the child reads on stdin (then end of input); nothing by default. */
  stdin?: string | Buffer;
  /**
   * A safety net against a hang, not a timed assertion: a child still running after this long is
   * killed (SIGKILL) and reported with `killed: true`, so a regression fails instead of hanging.
   */
  limitMs?: number;
  /** Further spawn options (uid, gid, ...). */
  spawn?: SpawnOptions;
  /** What node runs: `[BIN]` by default; the build's tests give the built entry or the sources instead. */
  entry?: string[];
}

export interface InProcessOptions {
  /** Working directory (io.cwd); the repo root by default. */
  cwd?: string;
  /** The whole environment the command sees (io.env); `terminalEnv()` by default. */
  env?: Record<string, string>;
  /** What the command reads on stdin (then end of input); nothing by default. */
  stdin?: string | Buffer;
}

/**
 * Runs `factory ...args` in this process through `runCli` (cli/main.ts), with the same result as
 * `execCli`: stdin and stdout are not terminals, and the command sees only the env and cwd given
 * here (a frozen copy, so tests running at once cannot change each other's), never process.env or
 * process.cwd() (cli/io.ts).
 */
export async function runCliInProcess(args: string[], options: InProcessOptions = {}): Promise<CliResult> {
  // Imported on first use, so a test that only spawns the CLI does not load the whole command tree.
  const { runCli } = await import('../../cli/main.ts');
  let stdout = '';
  let stderr = '';
  const input = options.stdin ?? '';
  const code = await runCli(args, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env: Object.freeze({ ...(options.env ?? terminalEnv()) }),
    cwd: options.cwd ?? ROOT,
    stdin: Readable.from(input.length ? [typeof input === 'string' ? Buffer.from(input) : input] : []),
    stdinIsTTY: false,
    stdoutIsTTY: false,
  });
  return { code, signal: null, stdout, stderr, killed: false };
}

/** Runs `bin/factory.js ...args` to its end and collects its exit code and output. */
export function execCli(args: string[], options: ExecCliOptions = {}): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...(options.entry ?? [BIN]), ...args], {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? terminalEnv(),
      ...options.spawn,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const guard = options.limitMs === undefined ? undefined : setTimeout(() => ((killed = true), child.kill('SIGKILL')), options.limitMs);
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code, signal) => (clearTimeout(guard), done({ code, signal, stdout, stderr, killed })));
    // A child that exits before reading its input must not fail the test with EPIPE.
    child.stdin!.on('error', () => {});
    child.stdin!.end(options.stdin ?? '');
  });
}

/** A long-running `bin/factory.js` child (dev, serve, watch) whose output a test waits on. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** The exit code, once the process has exited. */
  exited: Promise<number | null>;
  /** The exit code, once the process has exited and its output is all read (stdout() and stderr() are complete). */
  closed: Promise<number | null>;
  /** Resolves once `what()` holds, checked on every output; fails if the process exits first. */
  waitFor(what: () => boolean, label: string): Promise<void>;
}

/** Starts `bin/factory.js ...args`; waits are for its output, never for a fixed time. */
export function startCli(args: string[], options: Pick<ExecCliOptions, 'cwd' | 'env' | 'entry'> = {}): RunningCli {
  const child = spawn(process.execPath, [...(options.entry ?? [BIN]), ...args], { cwd: options.cwd ?? ROOT, env: options.env ?? terminalEnv() });
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  child.stdout.on('data', (d) => ((stdout += d), wake()));
  child.stderr.on('data', (d) => ((stderr += d), wake()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => (wake(), done(code))));
  const closed = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    closed,
    async waitFor(what, label) {
      while (!what()) {
        if (child.exitCode !== null || child.signalCode !== null) assert.fail(`factory ${args[0]} exited while waiting for ${label}:\n${stdout}\n${stderr}`);
        await new Promise<void>((resume) => waiters.push(resume));
      }
    },
  };
}
