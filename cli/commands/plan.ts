import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, FactoryError, exitWith } from '../../core/errors.ts';
import type { Snapshot } from '../../core/snapshot.ts';
import { renderInactive } from '../compiler/inactive.ts';
import { addClientOptions, clientFromFlags, type Client, type ClientFlags } from '../client.ts';
import type { Diagnostic, SourceFile } from '../compiler/index.ts';
import { fsReason, type CliIO } from '../io.ts';
import { asGiven, diagnosticFormat, type DiagnosticFormat } from './validate.ts';

/**
 * `factory plan [dir]` (docs/plan-apply.md): compile locally, send the snapshot to the runtime,
 * print the changes per resource. The helpers here are shared by apply, watch and dev.
 */

export interface Change {
  resource: 'factory' | 'webhook' | 'automation' | 'environment';
  name: string;
  action: 'create' | 'update' | 'delete' | 'no-op';
  file: string;
  diff?: { field: string; before: unknown; after: unknown }[];
}

/** The runtime's answer to POST /api/v1/factories/:name/plan. */
export interface PlanResponse {
  factory: string;
  base_revision: string;
  revision: string | null;
  digest: string;
  changed: boolean;
  summary: { create: number; update: number; delete: number; no_op: number };
  changes: Change[];
  notes: string[];
}

/** What `plan --out` writes and `apply --plan` reads: the plan plus the exact snapshot planned. */
export interface PlanFile extends PlanResponse {
  snapshot: Snapshot;
}

export interface Compiled {
  snapshot: Snapshot;
  files: SourceFile[];
}

/**
 * Loads and compiles `dir`, printing diagnostics (warnings too) to stderr. Returns undefined
 * when there are errors; the caller decides whether that ends the command (plan) or not (watch).
 * With a client (plan, apply, watch), a webhook name written in `webhook_ids` gets the UID the
 * runtime knows for it as its hint (docs/definitions.md).
 */
export async function compileRepo(io: CliIO, dir: string, format: DiagnosticFormat, client?: Client): Promise<Compiled | undefined> {
  // Loaded on use, not at start-up: the compiler (YAML, Ajv) is most of what `factory --help` would load.
  const { compile, factoryNameOf, formatDiagnostics, loadRepo } = await import('../compiler/index.ts');
  const root = resolve(io.cwd, dir);
  const files = await loadRepo(root);
  let result = compile(files, { root });
  if (client && result.diagnostics.some((d) => d.code === 'automation.webhook_ids_file_name')) {
    const runtimeWebhooks = await runtimeWebhookUids(client, factoryNameOf(files));
    if (runtimeWebhooks) result = compile(files, { root, runtimeWebhooks });
  }
  if (result.diagnostics.length) io.stderr(formatDiagnostics(asGiven(dir, result.diagnostics), format));
  return result.snapshot ? { snapshot: result.snapshot, files } : undefined;
}

/** The factory's webhooks in the runtime (name → UID); undefined when the runtime cannot say. */
async function runtimeWebhookUids(client: Client, factory: string | undefined): Promise<Map<string, string> | undefined> {
  if (!factory) return undefined;
  try {
    const body = await client.request<{ webhooks: { name: string; uid: string }[] }>('GET', `/api/v1/webhooks?factory=${encodeURIComponent(factory)}`);
    return new Map(body.webhooks.map((w) => [w.name, w.uid]));
  } catch {
    // Unreachable, no key, not allowed: the offline hint stays, and plan reports the errors as usual.
    return undefined;
  }
}

/**
 * Prints a runtime refusal as diagnostics (`file:line:col: error CODE: message`,
 * docs/plan-apply.md), placing each `{file, pointer}` with the compiler's `locate`, then the
 * problem's sentence. Resolves to false for an error that is not a runtime refusal (the caller
 * rethrows it).
 */
export async function printRuntimeErrors(io: CliIO, err: unknown, dir: string, files: SourceFile[], format: DiagnosticFormat): Promise<boolean> {
  if (!(err instanceof FactoryError)) return false;
  const { formatDiagnostics, locate, sortDiagnostics } = await import('../compiler/index.ts');
  const diags: Diagnostic[] = [];
  for (const e of err.errors ?? []) {
    const code = e.code ?? err.code;
    if (!e.file) {
      io.stderr(`error ${code}: ${e.pointer ? e.pointer + ': ' : ''}${e.message}\n`);
      continue;
    }
    const { line, column } = locate(files, e.file, e.pointer);
    diags.push({ file: e.file, line, column, code, message: e.message, pointer: e.pointer, severity: 'error' });
  }
  // Sorted by file and line, as validate prints the compiler's (docs/definitions.md#decisions).
  if (diags.length) io.stderr(formatDiagnostics(asGiven(dir, sortDiagnostics(diags)), format === 'json' ? 'text' : format));
  io.stderr(`error: ${err.message}\n`);
  return true;
}

const SIGN: Record<Change['action'], string> = { create: '+', update: '~', delete: '-', 'no-op': ' ' };

const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? 'null';
  return s.length > 100 ? s.slice(0, 97) + '...' : s;
};

/** The text form of a plan's changes: one line per changed resource, field diffs under updates. */
export function renderChanges(changes: Change[], notes: string[]): string {
  let out = '';
  const width = Math.max(0, ...changes.map((c) => `${c.resource} ${c.name}`.length));
  for (const c of changes) {
    if (c.action === 'no-op') continue;
    out += `  ${SIGN[c.action]} ${`${c.resource} ${c.name}`.padEnd(width)}  ${c.action.padEnd(6)}  ${c.file}\n`;
    if (c.action === 'update') for (const d of c.diff ?? []) out += `      ${d.field}: ${show(d.before)} -> ${show(d.after)}\n`;
  }
  for (const n of notes) out += `note: ${n}\n`;
  return out;
}

/** `.` reads as a typo at the end of a sentence; say what it is. */
function dirInWords(dir: string): string {
  return dir === '.' || dir === './' ? 'the current directory' : dir;
}

/** The applied revision label when there is one, and the base revision a later apply is checked against. */
export function revisionInWords(r: { revision: string | null; base_revision: string }): string {
  return `${r.revision ? `revision ${r.revision}, ` : ''}base revision ${r.base_revision}`;
}

export function summaryLine(s: PlanResponse['summary']): string {
  return `${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.no_op} unchanged.`;
}

export async function requestPlan(client: Client, snapshot: Snapshot): Promise<PlanResponse> {
  return client.request<PlanResponse>('POST', `/api/v1/factories/${encodeURIComponent(snapshot.factory.name)}/plan`, { snapshot });
}

export function registerPlan(program: Command, io: CliIO): void {
  const cmd = program
    .command('plan')
    .description('show what apply would change in the runtime, per resource')
    .argument('[dir]', 'the factory repo', '.')
    .option('--json', 'print the plan as JSON')
    .option('--detailed-exitcode', 'exit 0 when there are no changes, 2 when there are, 1 on error')
    .option('--out <file>', 'save the plan (with its snapshot) for `factory apply --plan`')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory plan examples/factory\n  $ factory plan . --detailed-exitcode --out plan.json && echo "up to date"\n\nThe runtime checks what only it knows: that secrets exist, url_token secret values, webhook UIDs, environment ownership and the webhook limit.\n',
    );
  addClientOptions(cmd).action(async (dir: string, opts: ClientFlags & { json?: boolean; detailedExitcode?: boolean; out?: string }) => {
    const format = diagnosticFormat(io, undefined);
    const client = clientFromFlags(opts, io, { dir });
    const compiled = await compileRepo(io, dir, format, client);
    if (!compiled) throw exitWith(1);
    let plan: PlanResponse;
    try {
      plan = await requestPlan(client, compiled.snapshot);
    } catch (err) {
      if (await printRuntimeErrors(io, err, dir, compiled.files, format)) throw exitWith(1);
      throw err;
    }
    if (opts.out) {
      const file: PlanFile = { ...plan, snapshot: compiled.snapshot };
      await writeFile(resolve(io.cwd, opts.out), JSON.stringify(file, null, 2) + '\n').catch((err: NodeJS.ErrnoException) => {
        throw new CliError(`cannot write ${opts.out}: ${fsReason(err)}`);
      });
    }
    if (opts.json) {
      // What the runtime validated but does not serve, as the text form lists it after the changes.
      io.stdout(JSON.stringify({ ...plan, inactive: compiled.snapshot.inactive ?? [] }, null, 2) + '\n');
    } else if (!plan.changed) {
      io.stdout(`No changes. Factory ${plan.factory} in the runtime matches the definitions in ${dirInWords(dir)} (${revisionInWords(plan)}).\n`);
      for (const n of plan.notes) io.stdout(`note: ${n}\n`);
    } else {
      io.stdout(`Plan for factory ${plan.factory} (base revision ${plan.base_revision}):\n`);
      io.stdout(renderChanges(plan.changes, plan.notes));
      io.stdout(`Plan: ${summaryLine(plan.summary)}\n`);
    }
    if (!opts.json) io.stdout(renderInactive(compiled.snapshot));
    if (opts.out && !opts.json) io.stderr(`saved the plan to ${opts.out}; apply it with: factory apply --plan ${opts.out}\n`);
    if (opts.detailedExitcode && plan.changed) throw exitWith(2);
  });
}
