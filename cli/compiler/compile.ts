import type { Snapshot } from '../../core/snapshot.ts';
import { buildSnapshot } from './build-snapshot.ts';
import { sortDiagnostics, type Diagnostic } from './diagnostics.ts';
import { parseFile, type ParsedFile } from './parse-file.ts';
import { classifyPath, isValidName } from './paths.ts';
import { crossFileRules } from './rules.ts';
import { schemaDiagnostics } from './schema-diagnostics.ts';

/** One file of a factory repo: its repo-relative path (with `/`) and its text. */
export interface SourceFile {
  path: string;
  text: string;
  /**
   * Set by the loader, instead of reading the file, when its real path is outside the repo (a
   * symbolic link leads there): that real path. The compiler reports it as file.outside_repo.
   */
  outsideRepo?: string;
  /** Set by the loader, instead of the text, when the file cannot be read: reported as is. */
  unreadable?: Unreadable;
}

/** Why the loader could not read a file, and where (docs/diagnostics.md). */
export interface Unreadable {
  code: 'file.too_large' | 'file.invalid_encoding' | 'file.not_a_file' | 'file.unreadable';
  message: string;
  line: number;
  column: number;
}

export interface CompileResult {
  snapshot?: Snapshot;
  diagnostics: Diagnostic[];
}

export interface CompileOptions {
  /** The repo's absolute directory; only resolves relative local repo URLs. */
  root?: string;
  /**
   * The factory's webhooks as the runtime knows them (name → UID), when plan or apply could ask;
   * a webhook name in `webhook_ids` then gets that UID as its hint (docs/definitions.md).
   */
  runtimeWebhooks?: ReadonlyMap<string, string>;
}

/**
 * Compiles a factory repo (docs/definitions.md, docs/filters.md, docs/plan-apply.md). Pure: the
 * files come in, the snapshot and every diagnostic come out; the snapshot only when there is no
 * error (warnings are allowed).
 */
export function compile(files: SourceFile[], options: CompileOptions = {}): CompileResult {
  const diagnostics: Diagnostic[] = [];
  const parsed: ParsedFile[] = [];
  const sources: SourceFile[] = [];
  const at1 = (file: string, code: string, message: string, severity: 'error' | 'warning' = 'error') =>
    diagnostics.push({ file, line: 1, column: 1, code, message, pointer: '', severity });

  for (const source of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const c = classifyPath(source.path);
    if (c.kind === 'ignored') continue;
    if (c.kind === 'unexpected') {
      at1(source.path, 'file.unexpected', `not read: ${c.hint}`, 'warning');
      continue;
    }
    if (source.outsideRepo !== undefined) {
      at1(source.path, 'file.outside_repo', `not read: it is a symbolic link (or inside a linked directory) that leads outside the repo, to ${source.outsideRepo}; definitions must be files in the repo`);
      continue;
    }
    sources.push(source);
    if (c.kind !== 'factory' && !isValidName(c.name)) {
      at1(source.path, 'file.invalid_name', `'${c.name}' is not a valid ${c.kind} name: lowercase letters, digits and -, starting with a letter or digit, at most 63 characters`);
    }
    if (source.unreadable !== undefined) {
      // Kept as a file whose value could not be read, as after a YAML error: its name still
      // exists for the other files' references, and factory.yaml is not reported missing.
      const { code, message, line, column } = source.unreadable;
      diagnostics.push({ file: source.path, line, column, code, message, pointer: '', severity: 'error' });
      parsed.push({ path: source.path, text: '', kind: c.kind, name: c.name, scope: c.scope, value: undefined, at: () => ({ line, column }) });
      continue;
    }
    const r = parseFile(source.path, source.text, c.kind, c.name, c.scope);
    for (const d of r.diagnostics) diagnostics.push(d);
    parsed.push(r.file);
    if (r.file.value !== undefined) for (const d of schemaDiagnostics(c.kind, source.path, r.file.value, r.file.at)) diagnostics.push(d);
  }
  if (!parsed.some((f) => f.kind === 'factory')) {
    at1('factory.yaml', 'repo.missing_factory_yaml', 'factory.yaml is missing; it is the root of a factory repo (name: <factory name>)');
  }
  for (const d of crossFileRules(parsed, options.runtimeWebhooks)) diagnostics.push(d);

  const sorted = sortDiagnostics(diagnostics);
  if (sorted.some((d) => d.severity === 'error')) return { diagnostics: sorted };
  return { snapshot: buildSnapshot(parsed, sources, options.root), diagnostics: sorted };
}
