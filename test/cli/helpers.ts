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
