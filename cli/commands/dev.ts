import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
import type { Command } from 'commander';
import { newStandardWebhooksSecret, newTokenSecret } from '../../core/ids.ts';
import type { Snapshot } from '../../core/snapshot.ts';
import type { ConfigFlags } from '../../runtime/config.ts';
import type { Store } from '../../runtime/store/index.ts';
import { createClient } from '../client.ts';
import type { CliIO } from '../io.ts';
import { addExecutorOptions } from './serve.ts';
import { diagnosticFormat } from './validate.ts';
import { assertFactoryRepo, untilSignalled, watchAndApply } from './watch.ts';
import { tightenMode } from '../../core/file-mode.ts';

/**
 * `factory dev [dir]` (README.md#commands): the runtime in this process, plus apply and watch, for
 * trying a factory out. Missing team secrets are created with random values suited to their use and
 * printed once: a development convenience that `serve` + `apply` never do.
 */

/** A random value for a secret, by how the repo uses it (docs/ingress.md#webhook-lifecycle, core/ids.ts). */
export function devSecretValue(snapshot: Snapshot, name: string): string {
  const users = snapshot.webhooks.filter((w) => w.secretName === name);
  if (users.some((w) => w.authMode === 'signature' && w.signatureScheme === 'standard-webhooks')) return newStandardWebhooksSecret();
  // Run notifications are signed as Standard Webhooks: whsec_ + base64 (docs/automations.md#notify).
  if (snapshot.automations.some((a) => a.notify?.secretName === name)) return newStandardWebhooksSecret();
  // token and url_token need a URL-safe value of at least 32 characters; base64url of 32 bytes is 43.
  return newTokenSecret();
}

/** Every team secret the snapshot names: webhook secrets, `{secret: NAME}` environment values and notify secrets. */
export function secretNames(snapshot: Snapshot): string[] {
  const names = new Set(snapshot.webhooks.map((w) => w.secretName));
  for (const a of snapshot.automations) if (a.notify) names.add(a.notify.secretName);
  for (const env of snapshot.environments) for (const v of Object.values(env.env)) if (typeof v === 'object') names.add(v.secret);
  return [...names].sort();
}

/** Creates the secrets the snapshot names that do not exist yet; returns name → value, once. */
export function createMissingSecrets(store: Store, snapshot: Snapshot): Map<string, string> {
  const created = new Map<string, string>();
  for (const name of secretNames(snapshot)) {
    if (store.secrets.get(name)) continue;
    const value = devSecretValue(snapshot, name);
    store.secrets.create(name, value);
    created.set(name, value);
  }
  return created;
}

/**
 * Writes each secret dev created to `<dataDir>/dev-secrets/<name>` (mode 0600, directory 0700),
 * beside admin.key and master.key which the data dir already holds in the clear, so a script or
 * the README tour can read a value without copying it from the terminal. Only values dev itself
 * made; `secret update` does not touch these files. Returns the directory, or undefined when it
 * could not be written (the values were printed anyway).
 */
function saveDevSecrets(dataDir: string, created: Map<string, string>): string | undefined {
  const dir = join(dataDir, 'dev-secrets');
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // The modes apply only to what is created now: one made earlier by someone else is tightened.
    tightenMode(dir, 0o700);
    for (const [name, value] of created) {
      // Secret names start with a letter or digit and hold no slash; check anyway, it becomes a path.
      if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) continue;
      writeFileSync(join(dir, name), value + '\n', { mode: 0o600 });
      tightenMode(join(dir, name), 0o600);
    }
    return dir;
  } catch {
    return undefined;
  }
}

/** A path relative to the working directory when it lies below it, else absolute. */
function shortPath(cwd: string, path: string): string {
  const r = relative(cwd, path);
  return r && !r.startsWith('..') && !isAbsolute(r) ? r : path;
}

/** One line on how a second terminal's CLI finds this runtime (cli/client.ts searches for `.factory`). */
function whereTheCliFindsIt(cwd: string, dataDir: string): string {
  if (basename(dataDir) !== '.factory') return `in another terminal, set FACTORY_DATA_DIR=${dataDir} and the CLI finds this runtime and the key.`;
  const home = dirname(dataDir);
  const shown = home === cwd ? 'here' : `in ${shortPath(cwd, home)}`;
  return `in another terminal, the CLI run ${shown} (or below it in the same git repo) finds this runtime and the key.`;
}

/** Keys, database and dev secrets must not end up in a commit of the repo the data dir sits in. */
function ignoreInGit(dataDir: string): void {
  const file = join(dataDir, '.gitignore');
  if (!existsSync(file)) writeFileSync(file, '# factory runtime data: keys, database, workspaces. Never commit.\n*\n');
}

export function registerDev(program: Command, io: CliIO): void {
  const command = program
    .command('dev')
    .description('run the runtime, create missing secrets, apply and watch a factory repo: for trying it out')
    .argument('[dir]', 'the factory repo', '.')
    .option('--port <port>', 'port to listen on (env FACTORY_PORT, default 8080; 0 picks a free one)')
    .option('--host <host>', 'address to bind (env FACTORY_HOST, default 127.0.0.1)')
    .option('--base-url <url>', 'public URL for ingress URLs (env FACTORY_BASE_URL)')
    .option('--data-dir <dir>', 'database and keys (env FACTORY_DATA_DIR, default <dir>/.factory)')
    .option('--max-concurrent-runs <n>', 'runs executed at once (env FACTORY_MAX_CONCURRENT_RUNS, default 2)')
    .option('--log-level <level>', 'runtime log level (env FACTORY_LOG_LEVEL, default info); dev prints one short line per delivery, run and change');
  addExecutorOptions(command)
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory dev examples/factory\n  $ npm start            # the same, for the example\n\nNot for production: it creates any missing team secret with a random value and prints it. Use `factory serve` and `factory apply` there.\n',
    )
    .action(async (dir: string, flags: ConfigFlags) => {
      // The runtime (Koa, SQLite, the executor) is loaded when dev runs, never for `factory --help`.
      const [{ parseConfig, withAnyLocalRepos, withDirectExecutor }, { isolationError, isolationOf, probeIsolation }, { startServer }, { createLogger }, { prettyDestination }, { closeInheritedDescriptors }] = await Promise.all([
        import('../../runtime/config.ts'),
        import('../../runtime/executor/sandbox.ts'),
        import('../../runtime/server.ts'),
        import('../../runtime/log.ts'),
        import('../../runtime/log-pretty.ts'),
        import('../../runtime/executor/descriptors.ts'),
      ]);
      closeInheritedDescriptors();
      // A dev runtime belongs to its factory repo: without --data-dir or FACTORY_DATA_DIR its data
      // lives in <dir>/.factory, where the CLI looks when run in the repo or pointed at it.
      const dataDir = flags.dataDir ?? (io.env.FACTORY_DATA_DIR ? undefined : join(dir, '.factory'));
      let config = parseConfig({ ...flags, dataDir }, io.env, io.cwd);
      // The author is the operator here: a local repo may be any directory they can read, unless
      // they name the ones allowed, as serve requires (docs/security.md#local-repositories).
      if (!config.localReposChosen) config = withAnyLocalRepos(config);
      // Before the server starts: a wrong directory fails at once, with nothing left listening.
      await assertFactoryRepo(io, dir);
      // dev is for laptops: without bubblewrap it carries on unsandboxed and says so, in one line
      // (serve refuses instead). An executor chosen explicitly is never replaced.
      const problem = config.executor === 'sandbox' ? probeIsolation(isolationOf(config)) : undefined;
      // A wrong sandbox setting of the user's own is refused, as serve refuses it: carrying on
      // without the sandbox they asked to adjust would answer a typo by dropping it. So is a
      // sandbox asked for by name, and a problem that direct would have too; all before anything
      // is written to the data dir.
      if (problem && (problem.setting || config.executorChosen || !problem.sandboxOnly)) throw isolationError(problem);
      if (problem?.sandboxOnly) {
        // As root, direct commands run as --run-uid, not as the person at the terminal.
        const who = config.runAs ? `uid ${config.runAs.uid} does (the runtime is root; that user must be able to read local repos)` : 'you do';
        io.stderr(`No sandbox for runs: ${problem.what}, so this dev runtime carries on with --executor direct and run commands see this machine as ${who}; to sandbox them, ${problem.fix}.\n`);
        config = withDirectExecutor(config);
      }
      // An activity feed for a person at a terminal instead of JSON lines (serve keeps those).
      const log = createLogger({ level: config.logLevel, destination: prettyDestination((text) => io.stdout(text)) });
      const server = await startServer(config, { log });
      ignoreInGit(config.dataDir);
      const { signal, dispose } = untilSignalled();
      try {
        io.stdout(`factory runtime listening on ${server.url}\n`);
        io.stdout(`admin key: ${server.adminKeyPath}${server.adminKeyCreated ? ' (created now)' : ''}; ${whereTheCliFindsIt(io.cwd, config.dataDir)}\n`);
        const client = createClient({ server: server.url, apiKey: readFileSync(server.adminKeyPath, 'utf8').trim() });
        await watchAndApply({
          dir,
          // A run's workspace or the database changing is not a change of the definitions.
          ignore: [config.dataDir, config.workDir],
          client,
          io,
          format: diagnosticFormat(io, undefined),
          signal,
          beforeApply: (snapshot) => {
            const created = createMissingSecrets(server.store, snapshot);
            if (!created.size) return;
            io.stdout('\nDevelopment convenience: created these missing team secrets with random values.\n');
            io.stdout('They are shown this once; configure senders with them, or replace them with `factory secret update NAME`.\n');
            for (const [name, value] of created) io.stdout(`  ${name} = ${value}\n`);
            const saved = saveDevSecrets(config.dataDir, created);
            if (saved) io.stdout(`Each is also in ${shortPath(io.cwd, saved)}/<name> (mode 0600) for scripts, e.g. $(cat ${shortPath(io.cwd, saved)}/${[...created.keys()][0]}).\n`);
            io.stdout('\n');
          },
        });
        io.stdout('Stopping: finishing in-flight requests.\n');
      } finally {
        dispose();
        await server.close();
      }
    });
}
