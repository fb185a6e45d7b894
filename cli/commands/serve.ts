import type { Command } from 'commander';
import { parseConfig, type ConfigFlags } from '../../runtime/config.ts';
import { startServer } from '../../runtime/server.ts';
import type { CliIO } from '../io.ts';

interface ServeFlags extends ConfigFlags {
  trustProxy?: boolean;
}

/** `factory serve` (SPEC 5, 10): runs the runtime until SIGTERM or SIGINT, then shuts down gracefully. */
export function registerServe(program: Command, io: CliIO): void {
  program
    .command('serve')
    .description('run the runtime: webhook ingress, run API, management API and executor')
    .option('--port <port>', 'port to listen on (env FACTORY_PORT, default 8080; 0 picks a free one)')
    .option('--host <host>', 'address to bind (env FACTORY_HOST, default 127.0.0.1)')
    .option('--base-url <url>', 'public URL for ingress URLs and session links (env FACTORY_BASE_URL)')
    .option('--data-dir <dir>', 'database, keys and workspaces (env FACTORY_DATA_DIR, default ./.factory)')
    .option('--trust-proxy', 'read the client address from X-Forwarded-For (env FACTORY_TRUST_PROXY)')
    .option('--max-concurrent-runs <n>', 'runs executed at once (env FACTORY_MAX_CONCURRENT_RUNS, default 2)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (env FACTORY_LOG_LEVEL)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory serve\n  $ FACTORY_MASTER_KEY=$(openssl rand -base64 32) factory serve --host 0.0.0.0 --base-url https://hooks.example.com\n\nOn first start an admin API key is written to <data-dir>/admin.key (mode 0600); the CLI uses it when run next to that data dir. Logs are JSON lines on stdout.\n',
    )
    .action(async (flags: ServeFlags) => {
      const config = parseConfig(flags, io.env, io.cwd);
      const server = await startServer(config);
      io.stdout(`factory runtime listening on ${server.url}\n`);
      io.stdout(`admin key: ${server.adminKeyPath}${server.adminKeyCreated ? ' (created now; keep it safe)' : ''}\n`);
      // Signal handlers belong to the serve command only: startServer (used by tests) installs none.
      const signal = await new Promise<string>((resolve) => {
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
      io.stdout(`received ${signal}: finishing in-flight requests, then stopping\n`);
      await server.close();
    });
}
