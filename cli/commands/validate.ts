import { join } from 'node:path';
import type { Command } from 'commander';
import { exitWith, usageError } from '../../core/errors.ts';
import type { Diagnostic } from '../compiler/index.ts';
import type { CliIO } from '../io.ts';

export type DiagnosticFormat = 'text' | 'json' | 'github';

/** --format, defaulting to github inside GitHub Actions (docs/plan-apply.md). */
export function diagnosticFormat(io: CliIO, option: string | undefined): DiagnosticFormat {
  const format = option ?? (io.env.GITHUB_ACTIONS === 'true' ? 'github' : 'text');
  if (format !== 'text' && format !== 'json' && format !== 'github') {
    throw usageError(`--format must be text, json or github, not '${format}'`);
  }
  return format;
}

/** Diagnostics with their file shown as given on the command line (dir + repo path). */
export function asGiven(dir: string, diags: Diagnostic[]): Diagnostic[] {
  return diags.map((d) => ({ ...d, file: join(dir, d.file).split('\\').join('/') }));
}

const PLAN_CHECKS =
  'Checked offline. Plan checks with the runtime: that secret names exist, url_token secret values, webhook UIDs and environment ownership.';

export function registerValidate(program: Command, io: CliIO): void {
  program
    .command('validate')
    .description('check a factory repo offline: schemas and cross-file rules')
    .argument('[dir]', 'the factory repo', '.')
    .option('--format <format>', 'text, json or github (default github when GITHUB_ACTIONS=true, else text)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory validate examples/factory\n  $ factory validate . --format json\n\nExit status: 0 when there is no error (warnings are printed), 1 on errors.\n',
    )
    .action(async (dir: string, opts: { format?: string }) => {
      const format = diagnosticFormat(io, opts.format);
      // Loaded here, not at start-up: the compiler (YAML, Ajv) is most of what `factory --help` would load.
      const { compileDir, formatDiagnostics } = await import('../compiler/index.ts');
      const result = await compileDir(dir, { cwd: io.cwd });
      const diags = asGiven(dir, result.diagnostics);
      const errors = diags.filter((d) => d.severity === 'error').length;
      const warnings = diags.length - errors;
      if (format === 'json' || diags.length) io.stdout(formatDiagnostics(diags, format));
      if (format === 'text') {
        io.stdout(errors || warnings ? `${plural(errors, 'error')}, ${plural(warnings, 'warning')}.\n` : `${dir}: no problems found.\n`);
        io.stdout(PLAN_CHECKS + '\n');
      }
      if (errors) throw exitWith(1);
    });
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
