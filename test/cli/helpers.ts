import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIO } from '../../cli/io.ts';
import { runCli } from '../../cli/main.ts';

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

/** Runs `factory ...args` through `runCli` (cli/main.ts) on a fresh `bufferIO`: its exit code and output. */
export async function runBuffered(
  args: string[],
  env: Record<string, string> = {},
  over: Parameters<typeof bufferIO>[1] = {},
): Promise<{ code: number; out: string; err: string }> {
  const io = bufferIO(env, over);
  const code = await runCli(args, io);
  return { code, out: io.out, err: io.err };
}
