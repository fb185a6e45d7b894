import type { Readable } from 'node:stream';
import { fsReason } from '../core/fs-reason.ts';

/**
 * What a command may touch of the outside world. The entry point passes the process's own;
 * tests pass buffers, so commands run in-process with `exitOverride()`, several at once in one
 * test process (test/helpers/cli.ts `runCliInProcess`).
 *
 * The rule for every command under cli/ (test/cli/io.test.ts checks it):
 * - environment variables only from `io.env`, never `process.env`; the working directory only from
 *   `io.cwd`, never `process.cwd()`: resolve every path the user gives against it
 *   (`resolve(io.cwd, flag)`), and pass `io.env` and `io.cwd` on (`parseConfig(flags, io.env,
 *   io.cwd)`, `compileDir(dir, { cwd: io.cwd })`);
 * - input from `io.stdin` (and `io.stdinIsTTY`), output through `io.stdout` / `io.stderr` (and
 *   `io.stdoutIsTTY`);
 * - no `process.exit` and no `process.exitCode`: a command returns, or throws a `CliError` with its
 *   exit code, and `runCli` (cli/main.ts) turns that into the exit code;
 * - only commands that keep running until stopped (serve, dev, watch) may listen for the process's
 *   signals; those are tested as child processes.
 */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdin: Readable;
  readonly stdinIsTTY: boolean;
  readonly stdoutIsTTY: boolean;
  /**
   * True once a write to stdout met a reader that went away (`| head`), so a command that would
   * go on printing (`run transcript --follow`) ends quietly instead (README.md#commands). Absent:
   * stdout never closes (a buffer).
   */
  stdoutClosed?(): boolean;
}

let stdoutOpen = true;
let stdoutFailed = false;
let stderrOpen = true;
let guarded = false;

/**
 * A reader that goes away (`factory run list | head -1`) is not a failure of the command. Node
 * reports the EPIPE as an 'error' event on the stream, which would otherwise crash the process with
 * a stack trace; instead further output is dropped and the command ends with its usual exit code.
 */
function guardOutput(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    stdoutOpen = false;
    if (err.code === 'EPIPE') return;
    // Output that could not be written (a full disk, `> /dev/full`) is a failure, however the
    // command itself ended: `factory build > snapshot.json && deploy` must stop here.
    stdoutFailed = true;
    const reason = fsReason(err);
    if (stderrOpen) process.stderr.write(`error: cannot write to standard output: ${reason}.\n`);
  });
  // The write may fail after the command returned its code (output is flushed asynchronously).
  process.on('exit', () => {
    if (stdoutFailed && !process.exitCode) process.exitCode = 1;
  });
  process.stderr.on('error', () => {
    stderrOpen = false;
  });
}

/** The process's own streams and environment, for the entry point. */
export function processIO(): CliIO {
  guardOutput();
  return {
    stdout: (text) => void (stdoutOpen && process.stdout.write(text)),
    stderr: (text) => void (stderrOpen && process.stderr.write(text)),
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
    stdinIsTTY: Boolean(process.stdin.isTTY),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stdoutClosed: () => !stdoutOpen,
  };
}

export { fsReason } from '../core/fs-reason.ts';
