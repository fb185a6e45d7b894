import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIO } from '../../cli/io.ts';

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * An in-process CliIO that collects stdout and stderr, with the repo root as working directory.
 * (The CLI as a child process: test/helpers/cli.ts.)
 */
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
