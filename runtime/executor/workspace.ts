/**
 * The run workspace (docs/runs.md): repos cloned into it, attachments and `prompt.md` written to
 * its root, and after the agent the files it changed, from `git status` in each cloned repo.
 *
 * Repos: a URL (https, ssh, `file://`) or an absolute local path is cloned with `git clone`, then
 * `ref` is checked out. A local directory that is not a git repository is copied instead (so a
 * plain folder of fixtures works); it then has no `ref` and reports no changed files. Every step
 * that touches the workspace or a repo is a command run under the run's isolation (sandbox.ts).
 */

import { constants } from 'node:fs';
import { chmod, lstat, open, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWithin } from '../config.ts';
import type { GroupExit } from './process.ts';
import { realPath, type CommandOptions, type RunSandbox } from './sandbox.ts';
import { CappedBuffer } from './transcript.ts';

export interface RepoSpec {
  url: string;
  ref?: string;
  path?: string;
}

/** The directory name a repo is cloned into when it has no `path`: its basename without `.git`. */
export function repoDirName(url: string): string {
  const trimmed = url.replace(/[/\\]+$/, '').replace(/\.git$/, '');
  const last = trimmed.split(/[/\\:]/).pop() ?? '';
  return last || 'repo';
}

/** The absolute path a repo goes to; throws when `path` would leave the workspace. */
export function repoTarget(workspaceDir: string, repo: RepoSpec): string {
  const rel = repo.path ?? repoDirName(repo.url);
  const target = path.resolve(workspaceDir, rel);
  const inside = path.relative(workspaceDir, target);
  if (inside === '' || inside.startsWith('..') || path.isAbsolute(inside)) {
    throw new Error(`repo path "${rel}" must be a directory inside the workspace`);
  }
  return target;
}

/** The local directory a repo URL points at, or null for a remote URL. */
export function localRepoPath(url: string): string | null {
  if (url.startsWith('file://')) return fileURLToPath(url);
  if (path.isAbsolute(url)) return url;
  return null;
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

export interface CommandRun extends GroupExit {
  output: string;
  truncated: boolean;
}

/** Runs one command of the run (its own process group), collecting output up to `cap` bytes. */
export async function runCaptured(sandbox: RunSandbox, cmd: CommandOptions, cap: number): Promise<CommandRun> {
  const buf = new CappedBuffer(cap);
  const exit = await sandbox.run({ ...cmd, onStdout: (c) => buf.push(c), onStderr: (c) => buf.push(c) });
  return { ...exit, output: buf.text(), truncated: buf.truncated };
}

/** Does `dir` hold (or sit inside) a git work tree? Asked inside the run's isolation. */
export async function isGitRepo(sandbox: RunSandbox, dir: string, env: Record<string, string>, extra: Pick<CommandOptions, 'signal' | 'onGroup'> = {}): Promise<boolean> {
  const r = await runCaptured(sandbox, { argv: ['git', 'rev-parse', '--is-inside-work-tree'], cwd: dir, env, network: false, sources: [dir], ...extra }, 1024);
  return r.code === 0 && r.output.trim() === 'true';
}

/** Can the run's commands list `dir` (and so reach it through every directory above it)? Asked inside the run's isolation. */
async function readableByRun(sandbox: RunSandbox, dir: string, env: Record<string, string>, extra: Pick<CommandOptions, 'signal' | 'onGroup'>): Promise<boolean> {
  const r = await runCaptured(sandbox, { argv: ['/bin/sh', '-c', 'test -r "$1" && test -x "$1"', 'check', dir], cwd: sandbox.workspace, env, network: false, sources: [dir], ...extra }, 1024);
  return r.code === 0;
}

/** Why a local repo the run's commands cannot read fails, and what to do (docs/security.md#local-repositories). */
function unreadableRepo(sandbox: RunSandbox, url: string, local: string): string {
  const who = sandbox.iso.runAs ? `the run's commands, which run as uid ${sandbox.iso.runAs.uid} because the runtime is root (--run-uid)` : "the run's commands";
  const where = sandbox.sandboxed ? local : `${local} and every directory above it`;
  return `repo ${url} cannot be read by ${who}; make ${where} readable to them (e.g. chmod o+rx), or name a repository they can read`;
}

/** One repo step as a command: argv, where it runs, and what it needs to see. */
export interface RepoCommand {
  argv: string[];
  cwd: string;
  network: boolean;
  sources: string[];
}

/** How one repo is brought into the workspace: the commands to run, or a plain copy. */
export type RepoPlan =
  | { kind: 'clone'; target: string; commands: RepoCommand[] }
  | { kind: 'copy'; target: string; from: string; command: RepoCommand };

/**
 * Decides how to fetch `repo` (clone, or copy of a local non-git directory). A local path is
 * shown to the clone or copy step alone, read-only; one that is, or lies inside, a directory the
 * run may not see (`hidden`: the data dir, the work dir) is refused.
 */
export async function planRepo(
  sandbox: RunSandbox,
  repo: RepoSpec,
  env: Record<string, string>,
  extra: Pick<CommandOptions, 'signal' | 'onGroup'> = {},
): Promise<RepoPlan> {
  const ws = sandbox.workspace;
  const target = repoTarget(ws, repo);
  const local = localRepoPath(repo.url);
  // By path as written and by real path: a symlink must not lead a repo into them.
  const within = (p: string, dir: string) => isWithin(path.resolve(p), dir) || isWithin(realPath(p) ?? p, realPath(dir) ?? dir);
  if (local !== null && sandbox.iso.hidden.some((h) => within(local, h))) {
    throw new Error(`repo ${repo.url} lies inside the runtime's data directory or work directory, which runs may not read; name a repository outside them`);
  }
  // A local path reads the host: only where the operator allows it (docs/security.md#local-repositories).
  // Allowed only by its real path: a symlink inside an allowed directory may point anywhere.
  const roots = sandbox.iso.localRepos;
  const reallyWithin = (p: string, dir: string) => isWithin(realPath(p) ?? path.resolve(p), realPath(dir) ?? path.resolve(dir));
  if (local !== null && roots !== null && !roots.some((r) => reallyWithin(local, r))) {
    const allowed = roots.length ? `only under ${roots.join(', ')}` : 'none here';
    throw new Error(`repo ${repo.url} is a local path, and the runtime allows local repositories ${allowed} (--local-repos); clone it from a URL, or ask the operator to allow its directory`);
  }
  const inTarget = sandbox.inside(target);
  if (local !== null && (await isDir(local)) && !(await isGitRepo(sandbox, local, env, extra))) {
    // git answers the same for a directory it may not read: say which it is before anything else.
    if (!(await readableByRun(sandbox, local, env, extra))) throw new Error(unreadableRepo(sandbox, repo.url, local));
    if (repo.ref) throw new Error(`repo ${repo.url} is not a git repository, so ref "${repo.ref}" cannot be checked out`);
    if (isWithin(ws, local)) {
      throw new Error(`repo ${repo.url} is the directory ${local}, which holds this run's workspace, so it cannot be copied into it; name a git repository or a directory outside the runtime's data directory`);
    }
    // The sandbox covers them with an empty directory; a direct copy would carry them along.
    if (!sandbox.sandboxed && sandbox.iso.hidden.some((h) => within(h, local))) {
      throw new Error(`repo ${repo.url} holds the runtime's data directory or work directory, which a copy would carry into the workspace; name a directory that does not`);
    }
    // Inside the run's isolation, as the run's user: the runtime itself never writes below a
    // workspace path that a run's commands could have turned into a symlink.
    const script = 'if [ -e "$2" ] || [ -L "$2" ]; then echo "$2 already exists" >&2; exit 1; fi; mkdir -p -- "$(dirname -- "$2")" && exec cp -R --preserve=mode,timestamps --no-target-directory -- "$1" "$2"';
    return { kind: 'copy', target, from: local, command: { argv: ['/bin/sh', '-c', script, 'copy', local, inTarget], cwd: ws, network: false, sources: [local] } };
  }
  const network = local === null;
  const sources = local === null ? [] : [local];
  // `--` ends the options: a url is never read as one, and after the ref it makes a ref that names
  // no commit an error instead of a checkout of a file by that name. A ref is never an option.
  if (repo.ref?.startsWith('-')) throw new Error(`repo ${repo.url}: ref "${repo.ref}" starts with "-", which git would read as an option; name a branch, tag or commit`);
  const commands: RepoCommand[] = [{ argv: ['git', 'clone', '--quiet', '--', repo.url, inTarget], cwd: ws, network, sources }];
  if (repo.ref) commands.push({ argv: ['git', 'checkout', '--quiet', repo.ref, '--'], cwd: target, network, sources });
  return { kind: 'clone', target, commands };
}

/**
 * Removes a finished run's workspace. A run may leave directories without write permission (Go's
 * module cache does), which its owner cannot empty: those are made writable first, never
 * following a symlink, and the removal is tried again.
 */
export async function removeWorkspace(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
    return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EACCES' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
  const makeWritable = async (d: string): Promise<void> => {
    await chmod(d, 0o700);
    for (const entry of await readdir(d)) {
      const p = path.join(d, entry);
      if ((await lstat(p)).isDirectory()) await makeWritable(p);
    }
  };
  await makeWritable(dir);
  await rm(dir, { recursive: true, force: true });
}

/** Attachment names are plain file names in the workspace root. */
export function safeFileName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !/[/\\\0]/.test(name) && name !== '.' && name !== '..';
}

/** The user and group a run's commands run as, when it is not the runtime's own. */
export interface Owner {
  uid: number;
  gid: number;
}

/**
 * Writes a file without following a symlink at its name (a repo step could have left one), and
 * hands it to `owner` through the open handle: a path-following chown as root could be sent to the
 * data dir by a run process that swaps the file for a symlink in between (under `direct`, a
 * process a repo step left behind can still be running).
 */
async function writeNoFollow(file: string, data: Buffer | string, owner?: Owner): Promise<void> {
  // O_NONBLOCK: a FIFO left at the name (by a repo's checkout hook) must not block the open, or the
  // run would hang past its timeout and hold its executor slot; it fails ENXIO, or is refused below.
  const fh = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o644);
  try {
    if (!(await fh.stat()).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EEXIST' });
    if (owner) await fh.chown(owner.uid, owner.gid);
    await fh.writeFile(data);
  } finally {
    await fh.close();
  }
}

/** Writes attachments (exact bytes) and prompt.md into the workspace root, owned by `owner` when given; returns the paths written. */
export async function writeInputs(workspaceDir: string, prompt: string, attachments: { name: string; bytes: Buffer }[], owner?: Owner): Promise<string[]> {
  const written: string[] = [];
  // A repo cloned to the same name (`path: prompt.md`) is the definition's mistake: the run fails
  // saying so (repo_failed), not as the runtime's own error.
  const write = async (name: string, content: string | Buffer) => {
    const file = path.join(workspaceDir, name);
    try {
      await writeNoFollow(file, content, owner);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EISDIR' || code === 'EEXIST' || code === 'ELOOP' || code === 'ENXIO') {
        throw new Error(`the workspace already holds ${name} (a repo's path?), where the runtime writes the run's ${name === 'prompt.md' ? 'prompt' : 'attachment'}; give the repo another path`);
      }
      throw err;
    }
    written.push(file);
  };
  for (const a of attachments) {
    if (!safeFileName(a.name) || a.name === 'prompt.md') throw new Error(`attachment name "${a.name}" is not a plain file name`);
    await write(a.name, a.bytes);
  }
  await write('prompt.md', prompt);
  return written;
}

export type ChangeKind = 'added' | 'modified' | 'deleted' | 'renamed';

export interface FileChange {
  path: string;
  kind: ChangeKind;
  oldPath?: string;
  /** Whether the path is untracked (`??`), which needs a different diff. */
  untracked: boolean;
}

/**
 * Parses `git status --porcelain=v1 -z --untracked-files=all`: `XY path\0`, and for renames and
 * copies `XY new\0old\0` (git-status(1), "Porcelain Format Version 1").
 */
export function parsePorcelainZ(out: string): FileChange[] {
  const parts = out.split('\0');
  const changes: FileChange[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i];
    if (entry.length < 4) continue;
    const xy = entry.slice(0, 2);
    const file = entry.slice(3);
    if (xy === '??') {
      changes.push({ path: file, kind: 'added', untracked: true });
    } else if (xy.includes('R') || xy.includes('C')) {
      const oldPath = parts[++i];
      changes.push({ path: file, kind: xy.includes('R') ? 'renamed' : 'added', oldPath, untracked: false });
    } else if (xy.includes('D')) {
      changes.push({ path: file, kind: 'deleted', untracked: false });
    } else if (xy.includes('A')) {
      changes.push({ path: file, kind: 'added', untracked: false });
    } else {
      changes.push({ path: file, kind: 'modified', untracked: false });
    }
  }
  return changes;
}
