import { pathToFileURL } from 'node:url';
import { realpathSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { CliError, FactoryError } from '../core/errors.ts';
import { processIO, type CliIO } from './io.ts';
import { COMMANDS } from './commands/index.ts';

/** Builds the whole command tree. Each command module adds itself through `COMMANDS`. */
export function buildProgram(io: CliIO): Command {
  const program = new Command('factory')
    .description('Definitions-as-code compiler and runtime for agent runs and webhook ingress')
    .option('--debug', 'print stack traces of unexpected errors')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) })
    .exitOverride();
  for (const register of COMMANDS) register(program, io);
  for (const sub of program.commands) applyDefaults(sub, io);
  return program;
}

function applyDefaults(cmd: Command, io: CliIO): void {
  cmd.exitOverride().configureOutput({ writeOut: (s) => io.stdout(s), writeErr: (s) => io.stderr(s) });
  for (const sub of cmd.commands) applyDefaults(sub, io);
}

/**
 * Runs the CLI and returns the exit code: 0 success, 1 failure, 2 usage error (SPEC 10).
 * This is the only place where errors become exit codes.
 */
export async function runCli(argv: string[], io: CliIO = processIO()): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof CliError) {
      // An empty message is a quiet exit code, e.g. `plan --detailed-exitcode` answering 2.
      if (err.message) io.stderr(`error: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof FactoryError) {
      io.stderr(`error: ${err.message}\n`);
      for (const e of err.errors ?? []) io.stderr(`  ${e.file ? e.file + ': ' : ''}${e.pointer ? e.pointer + ': ' : ''}${e.message}\n`);
      return 1;
    }
    const debug = argv.includes('--debug');
    const message = err instanceof Error ? err.message : String(err);
    io.stderr(`error: ${message}\n`);
    if (debug && err instanceof Error && err.stack) io.stderr(err.stack + '\n');
    return 1;
  }
}

const invokedDirectly = (() => {
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1] ?? '')).href;
  } catch {
    return false;
  }
})();

if (invokedDirectly || process.env.FACTORY_CLI_ENTRY === '1') {
  runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
