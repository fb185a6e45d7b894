/**
 * The run workspace (SPEC 9): repos cloned into it, attachments and `prompt.md` written to its
 * root, and after the agent the files it changed, from `git status` in each cloned repo.
 *
 * Repos: a URL (https, ssh, `file://`) or an absolute local path is cloned with `git clone`, then
 * `ref` is checked out. A local directory that is not a git repository is copied instead (so a
 * plain folder of fixtures works); it then has no `ref` and reports no changed files.
 */

import { cp, mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runInGroup, type GroupExit, type GroupSpawn } from './process.ts';
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

/** Runs argv in `cwd` as its own process group, collecting output up to `cap` bytes. */
export async function runCaptured(
  argv: string[],
  cwd: string,
  env: Record<string, string>,
  cap: number,
  extra: Pick<GroupSpawn, 'signal' | 'timeoutMs' | 'onGroup'> = {},
): Promise<CommandRun> {
  const buf = new CappedBuffer(cap);
  const exit = await runInGroup({ argv, cwd, env, onStdout: (c) => buf.push(c), onStderr: (c) => buf.push(c), ...extra });
  return { ...exit, output: buf.text(), truncated: buf.truncated };
}

/** Does `dir` hold (or sit inside) a git work tree? */
export async function isGitRepo(dir: string, env: Record<string, string>): Promise<boolean> {
  const r = await runCaptured(['git', 'rev-parse', '--is-inside-work-tree'], dir, env, 1024);
  return r.code === 0 && r.output.trim() === 'true';
}

/** How one repo is brought into the workspace: the commands to run, or a plain copy. */
export type RepoPlan =
  | { kind: 'clone'; target: string; commands: { argv: string[]; cwd: string }[] }
  | { kind: 'copy'; target: string; from: string };

/** Decides how to fetch `repo` (clone, or copy of a local non-git directory). */
export async function planRepo(workspaceDir: string, repo: RepoSpec, env: Record<string, string>): Promise<RepoPlan> {
  const target = repoTarget(workspaceDir, repo);
  const local = localRepoPath(repo.url);
  if (local !== null && (await isDir(local)) && !(await isGitRepo(local, env))) {
    if (repo.ref) throw new Error(`repo ${repo.url} is not a git repository, so ref "${repo.ref}" cannot be checked out`);
    return { kind: 'copy', target, from: local };
  }
  const commands = [{ argv: ['git', 'clone', '--quiet', repo.url, target], cwd: workspaceDir }];
  if (repo.ref) commands.push({ argv: ['git', 'checkout', '--quiet', repo.ref], cwd: target });
  return { kind: 'clone', target, commands };
}

/** Copies a local directory (a non-git repo) into the workspace. */
export async function copyDir(from: string, to: string): Promise<void> {
  await mkdir(path.dirname(to), { recursive: true });
  await cp(from, to, { recursive: true, errorOnExist: true, force: false });
}

/** Attachment names are plain file names in the workspace root. */
export function safeFileName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !/[/\\\0]/.test(name) && name !== '.' && name !== '..';
}

/** Writes attachments (exact bytes) and prompt.md into the workspace root; returns prompt.md's path. */
export async function writeInputs(workspaceDir: string, prompt: string, attachments: { name: string; bytes: Buffer }[]): Promise<string> {
  for (const a of attachments) {
    if (!safeFileName(a.name) || a.name === 'prompt.md') throw new Error(`attachment name "${a.name}" is not a plain file name`);
    await writeFile(path.join(workspaceDir, a.name), a.bytes);
  }
  const promptFile = path.join(workspaceDir, 'prompt.md');
  await writeFile(promptFile, prompt, 'utf8');
  return promptFile;
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
