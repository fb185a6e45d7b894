import type { Readable } from 'node:stream';

/**
 * What a command may touch of the outside world. The entry point passes the process's own;
 * tests pass buffers, so commands run in-process with `exitOverride()`.
 */
export interface CliIO {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdin: Readable;
  readonly stdinIsTTY: boolean;
  readonly stdoutIsTTY: boolean;
}

export function processIO(): CliIO {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
    stdinIsTTY: Boolean(process.stdin.isTTY),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
  };
}

/** Colour only on a TTY and never with NO_COLOR (SPEC 10). */
export function useColour(io: CliIO): boolean {
  return io.stdoutIsTTY && io.env.NO_COLOR === undefined;
}
