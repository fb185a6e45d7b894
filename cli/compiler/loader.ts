import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { CliError } from '../../core/errors.ts';
import { fsReason } from '../io.ts';
import type { SourceFile, Unreadable } from './compile.ts';
import { MAX_FILE_BYTES } from './parse-file.ts';
import { DEFINITION_DIRS, classifyPath, dirDepth, expectedDefinitionFile } from './paths.ts';

/**
 * Reads a factory repo from disk: factory.yaml and the files under the definitions directories
 * (DEFINITION_DIRS) that the compiler looks at (dotfiles and other files are not read). A repo that
 * cannot be read at all is a CliError with one sentence; a file that cannot be read comes back with
 * `unreadable` set, so that the compiler reports it beside every other file's problems
 * (docs/definitions.md#decisions).
 */
export async function loadRepo(given: string, options: { cwd?: string } = {}): Promise<SourceFile[]> {
  // Messages name the directory as the user gave it; `cwd` resolves it (the CLI's io.cwd).
  const dir = resolve(options.cwd ?? '.', given);
  const dirStat = await stat(dir).catch(() => undefined);
  if (!dirStat) throw new CliError(`${given} does not exist`);
  if (!dirStat.isDirectory()) throw new CliError(`${given} is not a directory`);
  const factoryStat = await stat(join(dir, 'factory.yaml')).catch(() => undefined);
  if (!factoryStat) throw new CliError(`${given} has no factory.yaml, so it is not a factory repo`);

  // Symbolic links are followed only within the repo: a definition whose real path is elsewhere
  // (a link to ~/.ssh/id_rsa, a linked webhooks/ directory) is reported, never read.
  const realRoot = await realpath(dir);

  // factory.yaml is stat-ed above, not listed: it is read through the careful path.
  const listed = new Map<string, boolean>([['factory.yaml', false]]);
  for (const top of DEFINITION_DIRS) {
    // A top directory that is a symbolic link may lead anywhere: its files are checked one by one.
    const topIsDir = (await lstat(join(dir, top)).catch(() => undefined))?.isDirectory() === true;
    for (const [path, plain] of await listFiles(dir, top, 0, topIsDir)) listed.set(path, plain);
  }
  const wanted = [...listed.keys()].sort().filter((p) => classifyPath(p).kind !== 'ignored');
  const files: SourceFile[] = [];
  // Reads in batches: thousands of small files load much faster than one at a time.
  for (let i = 0; i < wanted.length; i += 64) {
    const batch = wanted.slice(i, i + 64);
    // Unexpected files are only named in a warning; their content is not needed.
    const read = async (p: string): Promise<SourceFile> => {
      if (classifyPath(p).kind === 'unexpected') return { path: p, text: '' };
      try {
        // A regular file reached through real directories only is inside the repo: read at once.
        if (listed.get(p)) return { path: p, text: readPlainFile(dir, p) };
        const outside = await outsideRepo(realRoot, join(dir, p));
        return outside === undefined ? { path: p, text: await readText(dir, p) } : { path: p, text: '', outsideRepo: outside };
      } catch (err) {
        if (err instanceof NotLoaded) return { path: p, text: '', unreadable: err.problem };
        throw err;
      }
    };
    files.push(...(await Promise.all(batch.map(read))));
  }
  return files;
}

/**
 * The files under `rel`, each with whether it is plain: a regular file (not a symbolic link) whose
 * every directory from the repo root is a real directory too, so its real path is in the repo.
 */
async function listFiles(root: string, rel: string, depth: number, plainDir: boolean): Promise<[string, boolean][]> {
  const entries = await readdir(join(root, rel), { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return [];
    throw new CliError(`cannot read directory ${rel}: ${fsReason(err)}`);
  });
  const out: [string, boolean][] = [];
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.name.startsWith('.')) continue;
    const path = `${rel}/${e.name}`;
    // Deeper trees are never definitions (docs/definitions.md); do not wander into them.
    // A directory named like a definitions file is reported by readText; other directories are
    // only entered as deep as definitions sit (automations/<name>/, agents/<a>/skills/<s>/).
    if (e.isDirectory() && !/\.(ya?ml|md)$/.test(e.name)) {
      const top = rel.split('/')[0];
      if (depth < dirDepth(top)) {
        const inside = await listFiles(root, path, depth + 1, plainDir);
        out.push(...inside);
        // A definition folder without its file (Automation.md or Agent.md, a typo; an empty folder)
        // defines nothing: said, not skipped.
        const expected = expectedDefinitionFile(path);
        if (expected && !inside.some(([p]) => p === `${path}/${expected}`)) out.push([`${path}/`, false]);
      } else if (classifyPath(`${path}/`).kind === 'unexpected') {
        // A folder where only files belong (webhooks/sub/) is named in a warning, never entered.
        out.push([`${path}/`, false]);
      }
    } else out.push([path, plainDir && e.isFile()]);
  }
  return out;
}

/**
 * The real path of `full` when it lies outside `realRoot` (through a symbolic link to the file or
 * to a directory above it), else undefined. A path that cannot be resolved is left to readText,
 * which says why it cannot be read.
 */
async function outsideRepo(realRoot: string, full: string): Promise<string | undefined> {
  const real = await realpath(full).catch(() => undefined);
  if (real === undefined) return undefined;
  const rel = relative(realRoot, real);
  return rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? real : undefined;
}

/** A file that cannot be read: the compiler reports it as a diagnostic (docs/diagnostics.md). */
class NotLoaded extends Error {
  constructor(readonly problem: Unreadable) {
    super(problem.message);
  }
}

const notLoaded = (code: Unreadable['code'], message: string, line = 1, column = 1) => new NotLoaded({ code, message, line, column });

async function readText(root: string, path: string): Promise<string> {
  const full = join(root, path);
  const info = await stat(full).catch(async (err: NodeJS.ErrnoException) => {
    const link = await lstat(full).catch(() => undefined);
    if (link?.isSymbolicLink()) throw notLoaded('file.unreadable', `cannot read ${path}: it is a symbolic link to a file that does not exist`);
    throw notLoaded('file.unreadable', `cannot read ${path}: ${fsReason(err)}`);
  });
  if (info.isDirectory()) throw notLoaded('file.not_a_file', `cannot read ${path}: it is a directory, but a file is expected there`);
  // A FIFO or a device would block or never end; only regular files are definitions.
  if (!info.isFile()) throw notLoaded('file.not_a_file', `cannot read ${path}: it is not a regular file (a pipe, socket or device)`);
  checkSize(path, info.size);
  const bytes = await readFile(full).catch((err: NodeJS.ErrnoException) => {
    throw notLoaded('file.unreadable', `cannot read ${path}: ${fsReason(err)}`);
  });
  return decode(path, bytes);
}

/**
 * readText for a file listed as a regular file that no symbolic link leads to, synchronously into
 * one reused buffer: thousands of small reads through the thread pool, each with a stat, cost
 * several times more (docs/architecture.md#compile-speed). The messages are readText's.
 */
function readPlainFile(root: string, path: string): string {
  let fd: number;
  try {
    fd = openSync(join(root, path), 'r');
  } catch (err) {
    throw notLoaded('file.unreadable', `cannot read ${path}: ${fsReason(err as NodeJS.ErrnoException)}`);
  }
  try {
    let length = 0;
    for (let n = -1; n !== 0 && length < readBuffer.length; length += n) {
      n = readSync(fd, readBuffer, length, readBuffer.length - length, null);
    }
    // A full buffer is a file over the cap: its size for the message.
    if (length === readBuffer.length) checkSize(path, fstatSync(fd).size);
    return decode(path, readBuffer.subarray(0, length));
  } catch (err) {
    if (err instanceof NotLoaded) throw err;
    throw notLoaded('file.unreadable', `cannot read ${path}: ${fsReason(err as NodeJS.ErrnoException)}`);
  } finally {
    closeSync(fd);
  }
}

/** One byte more than a definitions file may have, so a full read means too large. */
const readBuffer = Buffer.allocUnsafe(MAX_FILE_BYTES + 1);

function checkSize(path: string, size: number): void {
  if (size > MAX_FILE_BYTES) {
    throw notLoaded('file.too_large', `${path} is ${size} bytes; definitions files may be at most ${MAX_FILE_BYTES} bytes (1 MiB)`);
  }
}

// ignoreBOM keeps a BOM in the text, so the source hash is the hash of the file's bytes.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decode(path: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    const offset = firstInvalidUtf8(bytes);
    // The line and column of the bad byte, counted as the compiler counts them: a BOM takes no column.
    const before = utf8.decode(bytes.subarray(0, offset));
    const lineStart = before.lastIndexOf('\n') + 1;
    const line = before.slice(0, lineStart).split('\n').length;
    const column = before.length - lineStart + 1 - (lineStart === 0 && before.charCodeAt(0) === 0xfeff ? 1 : 0);
    throw notLoaded('file.invalid_encoding', `${path} is not valid UTF-8 (at byte offset ${offset}); save it as UTF-8`, line, column);
  }
}

function firstInvalidUtf8(bytes: Uint8Array): number {
  let lo = 0;
  let hi = bytes.length;
  const ok = (n: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, n), { stream: true });
      return true;
    } catch {
      return false;
    }
  };
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ok(mid)) lo = mid;
    else hi = mid - 1;
  }
  // The longest valid prefix may end inside a character; the bad sequence starts at its lead byte.
  const complete = (n: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, n));
      return true;
    } catch {
      return false;
    }
  };
  while (lo > 0 && !complete(lo)) lo--;
  return lo;
}
