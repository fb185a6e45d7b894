import { chmodSync, statSync } from 'node:fs';

/**
 * Makes `path` no more open than `mode` (a directory or file made earlier by someone else keeps the
 * mode it had: `mkdir` and `writeFile` apply theirs only when they create). Returns the mode it had
 * when it was looser, else undefined (already as tight, or not there).
 */
export function tightenMode(path: string, mode: number): number | undefined {
  let was: number;
  try {
    was = statSync(path).mode & 0o777;
  } catch {
    return undefined;
  }
  if ((was & ~mode) === 0) return undefined;
  chmodSync(path, mode);
  return was;
}
