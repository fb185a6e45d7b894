import type { Command } from 'commander';
import type { ConfigFlags } from '../../runtime/config.ts';
import { collect } from '../client.ts';
import type { CliIO } from '../io.ts';

interface ServeFlags extends ConfigFlags {
  trustProxy?: boolean;
}


/**
 * Where run commands execute and the sandbox's limits, shared by `serve`, `dev` and `worker`
 * (docs/security.md#executors); `workDirHelp` says where each puts the run workspaces by default.
 */
export function addSandboxOptions(command: Command, workDirHelp: string): Command {
  return command
    .option('--executor <kind>', 'where run commands execute: sandbox (bubblewrap; the default on Linux) or direct (env FACTORY_EXECUTOR)')
    .option('--work-dir <dir>', workDirHelp)
    .option('--run-uid <uid[:gid]>', 'when this process is root: the user run commands run as (env FACTORY_RUN_UID, default 65534)')
    .option('--sandbox-ro-bind <dir>', 'a directory sandboxed commands may read, e.g. an agent installation; repeatable (env FACTORY_SANDBOX_RO_BIND, colon-separated)', collect)
    .option('--local-repos <dir>', 'a directory whose git repositories and folders environments may name by local path; repeatable (env FACTORY_LOCAL_REPOS, colon-separated; default: none, but for dev: any)', collect)
    .option('--sandbox-memory-mb <n>', 'memory (RLIMIT_DATA) of each sandboxed process, and its /tmp size (env FACTORY_SANDBOX_MEMORY_MB, default 4096)')
    .option('--sandbox-max-processes <n>', 'processes of the run user (RLIMIT_NPROC) (env FACTORY_SANDBOX_MAX_PROCESSES, default 4096)')
    .option('--sandbox-max-open-files <n>', 'open files of each sandboxed process (RLIMIT_NOFILE) (env FACTORY_SANDBOX_MAX_OPEN_FILES, default 8192)')
    .option('--sandbox-disk-mb <n>', 'disk a run\'s workspace may take, checked every few seconds; 0 for no limit (env FACTORY_SANDBOX_DISK_MB, default 20480)');
}

/** The executor's options, shared by `serve` and `dev` (docs/security.md#executors). */
export function addExecutorOptions(command: Command): Command {
  return addSandboxOptions(command, 'run workspaces, outside the data dir (env FACTORY_WORK_DIR, default <data-dir>-workspaces)')
    // Run notifications (docs/api.md#run-notifications).
    .option('--notify-allow <host[:port]>', 'the only hosts run notifications may go to; repeatable (env FACTORY_NOTIFY_ALLOW, comma-separated; default: any http(s) URL)', collect)
    .option('--notify-retry-delays <list>', 'waits between run notification attempts (env FACTORY_NOTIFY_RETRY_DELAYS, default 10s,30s,1m,3m,5m)')
    // Warp agents' repositories (docs/definitions.md#warp-agents-run-here).
    .option('--repository-base <url|dir>', 'where a Warp agent\'s repositories are cloned from: owner/repo is <base>/owner/repo (env FACTORY_REPOSITORY_BASE, default https://github.com)');
}

/** `factory serve` (docs/runtime.md, README.md#commands): runs the runtime until SIGTERM or SIGINT, then shuts down gracefully. */
export function registerServe(program: Command, io: CliIO): void {
  const command = program
    .command('serve')
    .description('run the runtime: webhook ingress, run API, management API and executor')
    .option('--port <port>', 'port to listen on (env FACTORY_PORT, default 8080; 0 picks a free one)')
    .option('--host <host>', 'address to bind (env FACTORY_HOST, default 127.0.0.1)')
    .option('--metrics-port <port>', 'serve Prometheus metrics at /metrics on this port of the same host (env FACTORY_METRICS_PORT; off by default)')
    .option('--base-url <url>', 'public URL for ingress URLs and session links (env FACTORY_BASE_URL)')
    .option('--data-dir <dir>', 'database and keys (env FACTORY_DATA_DIR, default ./.factory)')
    .option('--database <url>', 'a PostgreSQL URL shared by every replica, instead of the SQLite file in the data dir (env FACTORY_DATABASE_URL; needs FACTORY_MASTER_KEY)')
    .option('--trust-proxy', 'read the client address from X-Forwarded-For (env FACTORY_TRUST_PROXY)')
    .option('--max-concurrent-runs <n>', 'runs executed at once (env FACTORY_MAX_CONCURRENT_RUNS, default 2)')
    .option('--max-connections <n>', 'connections held at once; more are closed as they arrive (env FACTORY_MAX_CONNECTIONS, default half the open-file limit, at most 10000)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (env FACTORY_LOG_LEVEL)');
  addExecutorOptions(command)
    // After --executor <kind>, so commander leaves the value unset unless either is given (docs/runs.md#workers).
    .option('--no-executor', 'execute no run here: leave them to `factory worker`s; still serve the APIs and end runs whose worker died (env FACTORY_NO_EXECUTOR)')
    .option('--lease-seconds <n>', 'how long a run\'s executor may go without a heartbeat before the run ends ERROR worker_lost (env FACTORY_LEASE_SECONDS, default 30)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory serve\n  $ FACTORY_MASTER_KEY=$(openssl rand -base64 32) factory serve --host 0.0.0.0 --base-url https://hooks.example.com\n  $ FACTORY_MASTER_KEY=... factory serve --database postgres://factory@db:5432/factory   # one of several replicas (docs/deploy.md)\n\nOn first start an admin API key is written to <data-dir>/admin.key (mode 0600); the CLI uses it when run next to that data dir. Logs are JSON lines on stdout.\n\nRuns execute in a bubblewrap sandbox (apt-get install bubblewrap); serve refuses to start without it unless --executor direct is given. See docs/security.md.\n',
    )
    .action(async (flags: ServeFlags) => {
      // The runtime (Koa, SQLite, the executor) is loaded when serve runs, never for `factory --help`.
      const [{ parseConfig }, { closeInheritedDescriptors }] = await Promise.all([import('../../runtime/config.ts'), import('../../runtime/executor/descriptors.ts')]);
      closeInheritedDescriptors();
      const config = parseConfig(flags, io.env, io.cwd);
      // The sandbox's probe (a bubblewrap process) runs while the runtime loads; a runtime whose
      // runs could not start stops with its one sentence before it writes anything (no data dir, no
      // admin key), and the executor finds the verdict cached (docs/runtime.md#executor).
      const probe = config.executeRuns
        ? import('../../runtime/executor/sandbox.ts').then(({ isolationOf, assertIsolationAsync }) => assertIsolationAsync(isolationOf(config)))
        : undefined;
      // Settled here so that a refusal while the runtime still loads is not an unhandled rejection.
      probe?.catch(() => undefined);
      const [{ startServer }, { flushLogs }] = await Promise.all([import('../../runtime/server.ts'), import('../../runtime/log.ts')]);
      await probe;
      const server = await startServer(config);
      // Signal handlers belong to the serve command only: startServer (used by tests) installs none.
      // Installed before the lines below, so a SIGTERM sent as soon as they are read is handled.
      const stopped = new Promise<string>((resolve) => {
        const on = (name: string) => () => {
          process.off('SIGTERM', onTerm);
          process.off('SIGINT', onInt);
          resolve(name);
        };
        const onTerm = on('SIGTERM');
        const onInt = on('SIGINT');
        process.on('SIGTERM', onTerm);
        process.on('SIGINT', onInt);
      });
      // The log writes its lines at the end of each turn (runtime/log.ts): the ones start-up logged
      // go out first, so stdout reads in the order things happened.
      flushLogs();
      io.stdout(`factory runtime listening on ${server.url}\n`);
      io.stdout(
        server.adminKeyHere
          ? `admin key: ${server.adminKeyPath}${server.adminKeyCreated ? ' (created now; keep it safe)' : ''}\n`
          : 'admin key: not in this data dir; the replica that first opened the database wrote it to its own (docs/deploy.md#the-admin-key)\n',
      );
      const signal = await stopped;
      flushLogs();
      io.stdout(`received ${signal}: finishing in-flight requests, then stopping\n`);
      await server.close();
    });
}
