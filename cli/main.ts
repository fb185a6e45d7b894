import { pathToFileURL } from 'node:url';
import { readFileSync, realpathSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { CliError, FactoryError } from '../core/errors.ts';
import { processIO, type CliIO } from './io.ts';
import { cannotRead, takeLastAnswer } from './client.ts';
import { COMMANDS } from './commands/index.ts';

/** Builds the whole command tree. Each command module adds itself through `COMMANDS`. */
export function buildProgram(io: CliIO): Command {
  const program = new Command('factory')
    .description('Definitions-as-code compiler and runtime for agent runs and webhook ingress')
    .version(packageVersion(), '-V, --version', 'print the version of factory')
    .option('--debug', 'print stack traces of unexpected errors')
    .addHelpText('after', TOP_HELP);
  for (const register of COMMANDS) register(program, io);
  applyDefaults(program, io);
  return program;
}

/** The version in package.json, read once when the program is built. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

const TOP_HELP = `
Examples:
  $ factory validate examples/factory
  $ factory dev examples/factory          # runtime + apply + watch, for trying it out
  $ factory plan && factory apply         # the runtime and key found in .factory (docs/runtime.md#cli-connection)
  $ printf %s "$TOKEN" | factory secret create ci-token
  $ factory webhook list
  $ factory delivery list github
  $ factory run create --prompt "Fix the flaky test" --environment sandbox --wait

Run \`factory <command> --help\` for a command's options and examples.
`;

/**
 * Every command: errors through `io`, no process.exit, and a usage error on one line that names
 * the command's help (Commander's suggestion, when it has one, joins the same line).
 */
function applyDefaults(cmd: Command, io: CliIO): void {
  const path = commandPath(cmd);
  cmd.exitOverride().configureOutput({
    writeOut: (s) => io.stdout(s),
    writeErr: (s) => io.stderr(s),
    outputError: (s, write) => write(`${oneLine(s)}; run \`${path} --help\` for usage.\n`),
  });
  // A repeatable option (`--scope a --scope b`) starts from an empty list; Commander would print that
  // start as "(default: [])" in the help, so the list is filled in just before the action instead.
  const lists = cmd.options.filter((o) => Array.isArray(o.defaultValue) && o.defaultValue.length === 0);
  for (const o of lists) o.defaultValue = undefined;
  if (lists.length) {
    cmd.hook('preAction', () => {
      for (const o of lists) if (cmd.getOptionValue(o.attributeName()) === undefined) cmd.setOptionValue(o.attributeName(), []);
    });
  }
  for (const sub of cmd.commands) applyDefaults(sub, io);
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function oneLine(message: string): string {
  const [first = '', ...rest] = message.trim().split('\n').map((line) => line.trim()).filter(Boolean);
  // Commander's suggestion comes as its own line, "(Did you mean validate?)".
  const extras = rest.map((line) => (line.startsWith('(') ? line.replace(/^\(D/, '(d') : `(${line})`));
  return [first.replace(/\.$/, ''), ...extras].join(' ');
}

/**
 * Runs the CLI and returns the exit code: 0 success, 1 failure, 2 usage error (README.md#commands).
 * This is the only place where errors become exit codes.
 */
export async function runCli(argv: string[], io: CliIO = processIO()): Promise<number> {
  const program = buildProgram(io);
  takeLastAnswer();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help asked for (--help, help <command>) is a success; help shown because a command was
      // missing (`factory`, `factory run` alone) is a usage error, as Commander itself judges it.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof CliError) {
      // An empty message is a quiet exit code, e.g. `plan --detailed-exitcode` answering 2.
      if (err.message) io.stderr(`error: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof FactoryError) {
      io.stderr(`error: ${err.message}\n`);
      // The details the sentence does not already say (a server's detail often quotes its only error).
      for (const e of err.errors ?? []) {
        if (!err.message.includes(e.message)) io.stderr(`  ${e.file ? e.file + ': ' : ''}${e.pointer ? e.pointer + ': ' : ''}${e.message}\n`);
      }
      return 1;
    }
    const debug = argv.includes('--debug');
    const message = err instanceof Error ? err.message : String(err);
    const answer = takeLastAnswer();
    if (err instanceof TypeError && answer) {
      // A JSON object of the wrong shape: another server, or a runtime of another version.
      io.stderr(`error: ${cannotRead(answer.server, answer.method, answer.path, message)}\n`);
    } else io.stderr(`error: ${message}\n`);
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
