import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, exitWith } from '../../core/errors.ts';
import { fsReason, type CliIO } from '../io.ts';
import { asGiven, diagnosticFormat } from './validate.ts';

export function registerBuild(program: Command, io: CliIO): void {
  program
    .command('build')
    .description('compile a factory repo into a snapshot: canonical JSON with a digest')
    .argument('[dir]', 'the factory repo', '.')
    .option('-o, --out <file>', 'write the snapshot to this file instead of stdout')
    .option('--format <format>', 'how to print diagnostics: text, json or github')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory build examples/factory -o snapshot.json\n  $ factory build . | jq .digest\n\nThe same tree always builds the same bytes. Diagnostics go to stderr; on errors nothing is written and the exit status is 1.\n',
    )
    .action(async (dir: string, opts: { out?: string; format?: string }) => {
      const format = diagnosticFormat(io, opts.format);
      const { compileDir, formatDiagnostics, writeSnapshot } = await import('../compiler/index.ts');
      const result = await compileDir(dir, { cwd: io.cwd });
      if (result.diagnostics.length) io.stderr(formatDiagnostics(asGiven(dir, result.diagnostics), format));
      if (!result.snapshot) throw exitWith(1);
      const bytes = writeSnapshot(result.snapshot);
      if (!opts.out) {
        io.stdout(bytes);
        return;
      }
      await writeFile(resolve(io.cwd, opts.out), bytes).catch((err: NodeJS.ErrnoException) => {
        throw new CliError(`cannot write ${opts.out}: ${fsReason(err)}`);
      });
      io.stderr(`wrote ${opts.out} (${result.snapshot.digest})\n`);
    });
}
