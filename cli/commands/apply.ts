import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, exitWith } from '../../core/errors.ts';
import type { Snapshot } from '../../core/snapshot.ts';
import { addClientOptions, clientFromFlags, type Client, type ClientFlags } from '../client.ts';
import type { SourceFile } from '../compiler/index.ts';
import { fsReason, type CliIO } from '../io.ts';
import { compileRepo, printRuntimeErrors, renderChanges, revisionInWords, type PlanFile, type PlanResponse } from './plan.ts';
import { diagnosticFormat } from './validate.ts';
import type { WebhookView } from '../../runtime/definitions/views.ts';

/** `factory apply [dir]` (docs/plan-apply.md): one transaction in the runtime; prints each webhook's URL. */

export interface ApplyResponse extends Omit<PlanResponse, 'changed' | 'base_revision'> {
  applied: boolean;
  previous_base_revision: string;
  base_revision: string;
  webhooks: WebhookView[];
}

export async function requestApply(
  client: Client,
  snapshot: Snapshot,
  options: { baseRevision?: string; revision?: string } = {},
): Promise<ApplyResponse> {
  return client.request<ApplyResponse>('POST', `/api/v1/factories/${encodeURIComponent(snapshot.factory.name)}/apply`, {
    snapshot,
    ...(options.baseRevision ? { base_revision: options.baseRevision } : {}),
    ...(options.revision ? { revision: options.revision } : {}),
  });
}

/** The text report of an apply: what changed (or "No changes."), then every webhook's URL. */
export function renderApply(r: ApplyResponse): string {
  let out = '';
  if (!r.applied) {
    out += `No changes. Factory ${r.factory} is up to date (${revisionInWords(r)}).\n`;
    for (const n of r.notes) out += `note: ${n}\n`;
  } else {
    out += `Applied factory ${r.factory}${r.revision ? ` at revision ${r.revision}` : ''}: ${r.summary.create} created, ${r.summary.update} updated, ${r.summary.delete} deleted (base revision ${r.base_revision}).\n`;
    out += renderChanges(r.changes, r.notes);
  }
  if (r.webhooks.length) {
    out += 'Webhooks:\n';
    const width = Math.max(...r.webhooks.map((w) => w.name.length));
    for (const w of r.webhooks) out += `  ${w.name.padEnd(width)}  ${w.enabled ? 'enabled ' : 'disabled'}  ${w.url}\n`;
  }
  return out;
}

export function registerApply(program: Command, io: CliIO): void {
  const cmd = program
    .command('apply')
    .description('apply a factory repo to the runtime in one transaction and print the webhook URLs')
    .argument('[dir]', 'the factory repo', '.')
    .option('--plan <file>', 'apply a plan saved by `factory plan --out`; refused if the runtime changed since')
    .option('--revision <rev>', 'a label recorded with the apply, e.g. a commit SHA')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory apply examples/factory\n  $ factory apply --plan plan.json --revision "$GITHUB_SHA"\n\nApplying the same definitions again changes nothing and says so.\n',
    );
  addClientOptions(cmd).action(async (dir: string, opts: ClientFlags & { plan?: string; revision?: string; json?: boolean }, command: Command) => {
    // A saved plan holds its snapshot: a repo named beside it would be silently ignored.
    if (opts.plan && command.args.length > 0) {
      throw new CliError(`give a factory repo or --plan <file>, not both: the plan ${opts.plan} already holds what it applies.`, 2);
    }
    const format = diagnosticFormat(io, undefined);
    const client = clientFromFlags(opts, io, { dir });
    let snapshot: Snapshot;
    let baseRevision: string | undefined;
    let files: SourceFile[] = [];
    if (opts.plan) {
      const saved = await readPlanFile(resolve(io.cwd, opts.plan));
      snapshot = saved.snapshot;
      baseRevision = saved.base_revision;
    } else {
      const compiled = await compileRepo(io, dir, format, client);
      if (!compiled) throw exitWith(1);
      snapshot = compiled.snapshot;
      files = compiled.files;
    }
    let result: ApplyResponse;
    try {
      result = await requestApply(client, snapshot, { baseRevision, revision: opts.revision });
    } catch (err) {
      if (await printRuntimeErrors(io, err, dir, files, format)) throw exitWith(1);
      throw err;
    }
    io.stdout(opts.json ? JSON.stringify(result, null, 2) + '\n' : renderApply(result));
  });
}

async function readPlanFile(path: string): Promise<PlanFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the plan ${path}: ${fsReason(err)}.`);
  }
  let value: Partial<PlanFile>;
  try {
    value = JSON.parse(text) as Partial<PlanFile>;
  } catch {
    throw new CliError(`${path} is not JSON; make it with \`factory plan --out ${path}\`.`);
  }
  if (!value || typeof value !== 'object' || typeof value.base_revision !== 'string' || !value.snapshot) {
    throw new CliError(`${path} is not a saved plan (no snapshot or base_revision); make it with \`factory plan --out\`.`);
  }
  // The factory's name picks the route; the runtime checks the rest of the snapshot itself.
  const factory = (value.snapshot as { factory?: { name?: unknown } }).factory;
  if (typeof value.snapshot !== 'object' || typeof factory !== 'object' || factory === null || typeof factory.name !== 'string' || factory.name === '') {
    throw new CliError(`${path} is not a saved plan (its snapshot names no factory); make it with \`factory plan --out\`.`);
  }
  return value as PlanFile;
}
