import { hostname } from 'node:os';
import type { Command } from 'commander';
import { CliError, usageError } from '../../core/errors.ts';
import { addClientOptions, resolveClientFlags, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import { addSandboxOptions } from './serve.ts';
import { PLAIN_NAME } from '../../core/text.ts';

interface WorkerFlags extends ClientFlags {
  concurrency?: string;
  executor?: string;
  workDir?: string;
  name?: string;
  sandboxRoBind?: string[];
  localRepos?: string[];
  sandboxMemoryMb?: string;
  sandboxDiskMb?: string;
  sandboxMaxProcesses?: string;
  sandboxMaxOpenFiles?: string;
  runUid?: string;
}

/**
 * `factory worker` (docs/runs.md#workers): executes a runtime's runs on this machine, over the
 * worker API (a key with the `worker` scope), until SIGTERM or SIGINT.
 */
export function registerWorker(program: Command, io: CliIO): void {
  addClientOptions(
    addSandboxOptions(
      program
        .command('worker')
        .description('execute runs of a runtime on this machine (worker scope), until SIGTERM or SIGINT')
        .option('--concurrency <n>', 'runs executed at once (default 2)')
        .option('--name <name>', 'this worker\'s name in the runtime\'s logs (default: the host name)'),
      'run workspaces (env FACTORY_WORK_DIR, default ./.factory-worker-workspaces)',
    ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory key create --name worker-1 --kind agent --scope worker > worker.key\n  $ FACTORY_API_KEY=$(cat worker.key) factory worker --server https://factory.example.com --concurrency 4\n\nThe worker receives each run\'s secrets from the runtime (docs/security.md#workers). Like serve, it refuses to start without a working sandbox unless --executor direct is given.\n',
    )
    .action(async (flags: WorkerFlags) => {
      const concurrency = flags.concurrency === undefined ? 2 : Number(flags.concurrency);
      if (!/^\d+$/.test(String(flags.concurrency ?? '2')) || concurrency < 1 || concurrency > 1000) {
        throw usageError(`--concurrency must be an integer from 1 to 1000, got "${flags.concurrency}".`);
      }
      const name = flags.name ?? hostname();
      if (!PLAIN_NAME.test(name)) throw usageError('--name must be 1 to 128 characters without control characters.');
      const client = resolveClientFlags(flags, io);
      const [{ parseConfig }, { assertIsolation, isolationOf }, { RemoteWorker }, { closeInheritedDescriptors }] = await Promise.all([
        import('../../runtime/config.ts'),
        import('../../runtime/executor/sandbox.ts'),
        import('../../runtime/executor/remote-worker.ts'),
        import('../../runtime/executor/descriptors.ts'),
      ]);
      closeInheritedDescriptors();
      // The executor settings as serve parses them; the worker has no data dir and no database.
      const { FACTORY_DATABASE_URL: _db, FACTORY_DATA_DIR: _dir, ...env } = io.env;
      const config = parseConfig(
        {
          dataDir: '.factory-worker',
          executor: flags.executor,
          workDir: flags.workDir,
          runUid: flags.runUid,
          sandboxRoBind: flags.sandboxRoBind,
          localRepos: flags.localRepos,
          sandboxMemoryMb: flags.sandboxMemoryMb,
          sandboxDiskMb: flags.sandboxDiskMb,
          sandboxMaxProcesses: flags.sandboxMaxProcesses,
          sandboxMaxOpenFiles: flags.sandboxMaxOpenFiles,
        },
        env,
        io.cwd,
      );
      const isolation = isolationOf(config);
      assertIsolation(isolation);
      if (isolation.kind === 'direct') {
        io.stderr('warning: runs execute without a sandbox (--executor direct): their commands see this machine as the worker does (docs/security.md#executors)\n');
      }
      const worker = new RemoteWorker({
        server: client.server,
        apiKey: client.apiKey,
        name,
        concurrency,
        isolation,
        workDir: config.workDir,
        inheritedEnv: config.inheritedEnv,
        say: (line) => io.stdout(`${line}\n`),
      });
      io.stdout(`factory worker ${name} executing runs of ${client.server} (concurrency ${concurrency}, executor ${isolation.kind})\n`);
      const onSignal = (signal: string) => () => {
        io.stdout(`received ${signal}: stopping; runs in progress end ERROR (runtime_stopped)\n`);
        void worker.stop();
      };
      const onTerm = onSignal('SIGTERM');
      const onInt = onSignal('SIGINT');
      process.once('SIGTERM', onTerm);
      process.once('SIGINT', onInt);
      try {
        await worker.run();
      } finally {
        process.off('SIGTERM', onTerm);
        process.off('SIGINT', onInt);
      }
      if (worker.fatal) throw new CliError(`the runtime refused this worker: ${worker.fatal.message}`);
    });
}
