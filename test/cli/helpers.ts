import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIO } from '../../cli/io.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/** An in-process CliIO that collects stdout and stderr, with the repo root as working directory. */
export function bufferIO(env: Record<string, string> = {}, over: Partial<Pick<CliIO, 'cwd' | 'stdin' | 'stdinIsTTY' | 'stdoutIsTTY'>> = {}): CliIO & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: (s: string) => void (io.out += s),
    stderr: (s: string) => void (io.err += s),
    env,
    cwd: ROOT,
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stdoutIsTTY: false,
    ...over,
  };
  return io;
}

/** The environment of a fresh terminal for a child CLI: no FACTORY_* variables, no CI annotations, no colour. */
export function terminalEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACTORY_') && k !== 'GITHUB_ACTIONS') env[k] = v;
  return { ...env, NO_COLOR: '1', ...extra };
}

const BIN = resolve(ROOT, 'bin', 'factory.js');

/** A long-running `bin/factory.js` child (dev, serve, watch) whose output a test waits on. */
export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** The exit code, once the process has exited. */
  exited: Promise<number | null>;
  /** Resolves once `what()` holds, checked on every output; fails if the process exits first. */
  waitFor(what: () => boolean, label: string): Promise<void>;
}

/** Starts `bin/factory.js ...args`; waits are for its output, never for a fixed time. */
export function startCli(args: string[], options: { cwd: string; env?: Record<string, string> }): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: options.env ?? terminalEnv() });
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  child.stdout.on('data', (d) => ((stdout += d), wake()));
  child.stderr.on('data', (d) => ((stderr += d), wake()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => (wake(), done(code))));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async waitFor(what, label) {
      while (!what()) {
        if (child.exitCode !== null) assert.fail(`factory ${args[0]} exited while waiting for ${label}:\n${stdout}\n${stderr}`);
        await new Promise<void>((resume) => waiters.push(resume));
      }
    },
  };
}
