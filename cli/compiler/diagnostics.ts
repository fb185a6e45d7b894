import { visible } from '../terminal.ts';

/**
 * Diagnostics are data: the compiler returns them all at once, sorted by file, line and
 * column (docs/plan-apply.md). Codes are public API, named `<area>.<rule>`; DIAGNOSTIC_CODES lists
 * every code the compiler can emit and docs/diagnostics.md documents the same list (a test compares
 * them).
 */

export interface Diagnostic {
  file: string;
  line: number;
  column: number;
  code: string;
  message: string;
  pointer: string;
  severity: 'error' | 'warning';
}

export const DIAGNOSTIC_CODES = [
  'file.too_large',
  'file.invalid_encoding',
  'file.not_a_file',
  'file.unreadable',
  'file.unexpected',
  'file.invalid_name',
  'file.outside_repo',
  'yaml.syntax',
  'yaml.multiple_documents',
  'yaml.duplicate_key',
  'yaml.anchor',
  'yaml.alias',
  'yaml.tag',
  'yaml.merge_key',
  'yaml.complex_key',
  'yaml.invalid_text',
  'yaml.not_a_mapping',
  'factory.unknown_key',
  'factory.missing_key',
  'factory.invalid_value',
  'factory.unknown_runner',
  'webhook.unknown_key',
  'webhook.missing_key',
  'webhook.invalid_value',
  'webhook.signature_scheme_required',
  'webhook.signature_scheme_not_allowed',
  'webhook.duplicate_uid',
  'webhook.credential_delivery_id_header',
  'automation.unknown_key',
  'automation.missing_key',
  'automation.invalid_value',
  'automation.no_front_matter',
  'automation.unclosed_front_matter',
  'automation.front_matter_language',
  'automation.empty_prompt',
  'automation.unknown_provider',
  'automation.webhook_ids_count',
  'automation.webhook_ids_not_uid',
  'automation.webhook_ids_file_name',
  'automation.unknown_webhook_uid',
  'automation.duplicate_trigger',
  'automation.unknown_environment',
  'automation.unknown_event',
  'automation.invalid_schedule',
  'automation.notify_url',
  'automation.provider_not_served',
  'automation.not_served',
  'automation.unknown_agent',
  'automation.unknown_runner',
  'environment.unknown_key',
  'environment.missing_key',
  'environment.invalid_value',
  'agent.unknown_key',
  'agent.missing_key',
  'agent.invalid_value',
  'agent.unclosed_front_matter',
  'agent.front_matter_language',
  'agent.unknown_runner',
  'skill.unknown_key',
  'skill.missing_key',
  'skill.invalid_value',
  'skill.no_front_matter',
  'skill.unclosed_front_matter',
  'skill.front_matter_language',
  'skill.name_mismatch',
  'skill.unknown_agent',
  'runner.unknown_key',
  'runner.missing_key',
  'runner.invalid_value',
  'benchmark.unknown_key',
  'benchmark.missing_key',
  'benchmark.invalid_value',
  'benchmark.unknown_agent',
  'benchmark.unknown_task',
  'benchmark.unlisted_task',
  'benchmark_task.unknown_key',
  'benchmark_task.missing_key',
  'benchmark_task.invalid_value',
  'scorer.unknown_key',
  'scorer.missing_key',
  'scorer.invalid_value',
  'scorer.no_front_matter',
  'scorer.unclosed_front_matter',
  'scorer.front_matter_language',
  'scorer.unknown_agent',
  'repo.missing_factory_yaml',
  'repo.duplicate_name',
  'repo.too_many_webhooks',
  'repo.foreman_count',
  'filter.mixed_operators',
  'filter.unknown_operator',
  'filter.empty_in',
  'filter.in_and_not_in',
  'filter.invalid_value',
  'filter.invalid_exists',
  'filter.not_object',
  'filter.operator_at_top',
] as const;

export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

/** Sorted by file, then line, then column, then code, so output is stable (docs/plan-apply.md). */
export function sortDiagnostics(diags: Diagnostic[]): Diagnostic[] {
  return [...diags].sort(
    (a, b) =>
      cmp(a.file, b.file) || a.line - b.line || a.column - b.column || cmp(a.code, b.code) || cmp(a.message, b.message),
  );
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Renders diagnostics: `text` is `path:line:col: severity code: message` (docs/plan-apply.md),
 * `json` an array of objects, `github` workflow commands that annotate the file in a pull request.
 */
export function formatDiagnostics(diags: Diagnostic[], format: 'text' | 'json' | 'github'): string {
  if (format === 'json') {
    const rows = diags.map((d) => ({
      file: d.file,
      line: d.line,
      column: d.column,
      code: d.code,
      pointer: d.pointer,
      severity: d.severity,
      message: d.message,
    }));
    return JSON.stringify(rows, null, 2) + '\n';
  }
  if (format === 'github') {
    // GitHub Actions workflow commands, one per diagnostic (docs/definitions.md#decisions).
    return diags
      .map(
        (d) =>
          `::${d.severity} file=${ghProperty(d.file)},line=${d.line},col=${d.column},title=${ghProperty(d.code)}::${ghData(d.message)}\n`,
      )
      .join('');
  }
  // A file name or a quoted value may hold control characters: shown as \xNN, never sent to the terminal.
  return diags.map((d) => `${visible(d.file)}:${d.line}:${d.column}: ${d.severity} ${d.code}: ${visible(d.message)}\n`).join('');
}

const ghData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const ghProperty = (s: string) => ghData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
