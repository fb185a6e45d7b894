import { lstat, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import type { Snapshot } from '../../core/snapshot.ts';
import { addClientOptions, clientFromFlags, type Client, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import { renderApply, requestApply } from './apply.ts';
import { compileRepo, printRuntimeErrors, requestPlan } from './plan.ts';
import { DEFINITION_DIRS } from '../compiler/paths.ts';
import { fsReason } from '../../core/fs-reason.ts';
import { visible } from '../terminal.ts';
import { diagnosticFormat, type DiagnosticFormat } from './validate.ts';

/**
 * `factory watch [dir]` (docs/plan-apply.md): apply once, then re-validate and re-apply whenever a
 * file of the repo changes. Errors (diagnostics, runtime refusals, an unreachable runtime) are
 * printed and the watch goes on: the next save tries again.
 */

/** Saves often come as several events (write, rename, chmod): wait for them to settle. */
export const DEBOUNCE_MS = 150;

/** `.factory` and `.factory-workspaces`: a dev runtime's data and work dirs may sit in the repo. */
const IGNORED = /(^|[/\\])(\.git|node_modules|\.factory[^/\\]*)([/\\]|$)/;

/** What the loader reads: factory.yaml and the definitions directories; nothing else is watched. */
const WATCHED_TOP = new Set<string>(['factory.yaml', ...DEFINITION_DIRS]);

export interface WatchOptions {
  dir: string;
  client: Client;
  io: CliIO;
  format: DiagnosticFormat;
  revision?: string;
  /** Runs before each apply with the compiled snapshot (`dev` creates missing secrets here). */
  beforeApply?: (snapshot: Snapshot) => void | Promise<void>;
  /** Stops the watch; the returned promise resolves once it has. */
  signal: AbortSignal;
  /** Directories never watched, whatever their name: `dev` passes its data and work dirs. */
  ignore?: string[];
  /** Called after every cycle, for tests and `dev`: applied, unchanged or failed. */
  onCycle?: (outcome: 'applied' | 'unchanged' | 'failed') => void;
}

/** One validate + apply; never throws (watch must survive every error). */
export async function applyOnce(o: Omit<WatchOptions, 'signal' | 'onCycle'>): Promise<'applied' | 'unchanged' | 'failed'> {
  try {
    const compiled = await compileRepo(o.io, o.dir, o.format, o.client);
    if (!compiled) {
      o.io.stderr('Not applied: fix the errors above; watching for changes.\n');
      return 'failed';
    }
    try {
      await o.beforeApply?.(compiled.snapshot);
      // A deleted webhook's UID is never used again, so its senders would have to be given a new
      // URL: a file gone for a moment (a branch switch, a move) must not do that unattended.
      const plan = await requestPlan(o.client, compiled.snapshot);
      const gone = plan.changes.filter((c) => c.resource === 'webhook' && c.action === 'delete').map((c) => `'${visible(c.name)}'`);
      if (gone.length) {
        o.io.stderr(
          `Not applied: this would delete webhook${gone.length > 1 ? 's' : ''} ${gone.join(', ')}, and a deleted webhook's URL never works again; ` +
            `restore ${gone.length > 1 ? 'their files' : 'its file'}, or run \`factory apply ${o.dir}\` to delete ${gone.length > 1 ? 'them' : 'it'}; watching for changes.\n`,
        );
        return 'failed';
      }
      const result = await requestApply(o.client, compiled.snapshot, { revision: o.revision, baseRevision: plan.base_revision });
      o.io.stdout(renderApply(result));
      return result.applied ? 'applied' : 'unchanged';
    } catch (err) {
      if (!(await printRuntimeErrors(o.io, err, o.dir, compiled.files, o.format))) throw err;
      o.io.stderr('Not applied; watching for changes.\n');
      return 'failed';
    }
  } catch (err) {
    o.io.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 'failed';
  }
}

/**
 * Whether a change at `path` (absolute) under the repo `root` is left unwatched: anything outside
 * factory.yaml and the definitions directories, which the loader never reads (a symlink to /usr
 * or a build folder would otherwise be walked whole), and `ignore`.
 */
export function watchIgnores(root: string, ignore: string[], path: string, linked: readonly string[] = []): boolean {
  if (ignore.some((dir) => path === dir || path.startsWith(dir + sep))) return true;
  // Inside the real directory of a definitions dir that is a link within the repo: watched as its own.
  const base = linked.find((dir) => path === dir || path.startsWith(dir + sep));
  const rel = relative(base ?? root, path).split(sep).join('/');
  if (base !== undefined) return IGNORED.test(rel);
  if (rel === '') return false;
  if (rel.startsWith('../') || !WATCHED_TOP.has(rel.split('/')[0])) return true;
  return IGNORED.test(rel);
}

/**
 * The real directories of the definitions dirs that are symlinks to a directory inside the repo
 * (the compiler reads through such a link, docs/definitions.md): watched too, since links are
 * not followed. A link leading outside the repo is not read, so not watched.
 */
async function linkedDefinitionDirs(root: string): Promise<string[]> {
  const out: string[] = [];
  const realRoot = await realpath(root);
  for (const name of DEFINITION_DIRS) {
    try {
      if (!(await lstat(join(root, name))).isSymbolicLink()) continue;
      const target = await realpath(join(root, name));
      if ((target === realRoot || target.startsWith(realRoot + sep)) && (await stat(target)).isDirectory()) out.push(target);
    } catch {
      // Missing or dangling: nothing to watch.
    }
  }
  return out;
}

/** Applies now and on every change under `dir` until `signal` aborts. */
export async function watchAndApply(o: WatchOptions): Promise<void> {
  const root = resolve(o.io.cwd, o.dir);
  let running = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  const cycle = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    do {
      again = false;
      const outcome = await applyOnce(o);
      o.onCycle?.(outcome);
    } while (again && !o.signal.aborted);
    running = false;
  };
  // Loaded on use: `factory --help` and the other commands never need a file watcher.
  const { watch } = await import('chokidar');
  const linked = await linkedDefinitionDirs(root);
  const options = {
    ignoreInitial: true,
    // A link is watched as a link: its target may be anywhere, and the loader reads none outside the repo.
    followSymlinks: false,
    ignored: (path: string) => watchIgnores(root, o.ignore ?? [], path, linked),
  };
  // The linked dirs in a watcher of their own: one watcher of both drops the events of a real
  // directory that it also sees, unfollowed, as a link.
  const watchers = [watch(root, options), ...(linked.length ? [watch(linked, options)] : [])];
  const reported = new Set<string>();
  const onError = (err: unknown) => {
    // A folder it may not read, a link loop: said once per path, and the watch goes on.
    const e = err as NodeJS.ErrnoException;
    const key = `${e.code ?? ''}:${e.path ?? ''}`;
    if (reported.has(key)) return;
    reported.add(key);
    const where = e.path ? ` ${visible(relative(root, e.path) || '.')}` : '';
    o.io.stderr(`warning: cannot watch${where}: ${fsReason(err)}; changes there are not seen.\n`);
  };
  const onChange = (_event: string, path: string) => {
    if (o.signal.aborted) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      o.io.stdout(`\nChange in ${visible(relative(root, path) || '.')}; applying ${o.dir}...\n`);
      void cycle();
    }, DEBOUNCE_MS);
  };
  for (const w of watchers) {
    w.on('error', onError);
    w.on('all', onChange);
  }
  await Promise.all(watchers.map((w) => new Promise<void>((ready) => w.once('ready', () => ready()))));
  await cycle();
  if (!o.signal.aborted) await new Promise<void>((done) => o.signal.addEventListener('abort', () => done(), { once: true }));
  clearTimeout(timer);
  await Promise.all(watchers.map((w) => w.close()));
}

/**
 * Fails (CliError, one sentence) when `dir` is not a factory repo: missing, not a directory or
 * without factory.yaml. watch and dev check this before anything starts; once running, they print
 * errors and go on, but a typo in the directory would otherwise watch nothing forever.
 */
export async function assertFactoryRepo(io: CliIO, dir: string): Promise<void> {
  const { loadRepo } = await import('../compiler/index.ts');
  await loadRepo(dir, { cwd: io.cwd });
}

/** An AbortSignal that fires on the first SIGINT or SIGTERM; for long-running commands. */
export function untilSignalled(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}

export function registerWatch(program: Command, io: CliIO): void {
  const cmd = program
    .command('watch')
    .description('apply a factory repo now and again on every change; errors are printed, the watch goes on')
    .argument('[dir]', 'the factory repo', '.')
    .option('--revision <rev>', 'a label recorded with each apply')
    .addHelpText('after', '\nExamples:\n  $ factory watch examples/factory\n\nStop with Ctrl-C.\n');
  addClientOptions(cmd).action(async (dir: string, opts: ClientFlags & { revision?: string }) => {
    const client = clientFromFlags(opts, io, { dir });
    await assertFactoryRepo(io, dir);
    const { signal, dispose } = untilSignalled();
    io.stdout(`Watching ${dir} (Ctrl-C to stop).\n`);
    try {
      await watchAndApply({ dir, client, io, format: diagnosticFormat(io, undefined), revision: opts.revision, signal });
    } finally {
      dispose();
    }
  });
}
