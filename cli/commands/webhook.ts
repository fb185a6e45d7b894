import type { Command } from 'commander';
import { CliError } from '../../core/errors.ts';
import { WEBHOOK_UID_PATTERN } from '../../core/ids.ts';
import { addClientOptions, clientFromFlags, nonEmpty, type Client, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import type { WebhookView } from '../../runtime/definitions/views.ts';
import { addLifecycle } from './webhook-lifecycle.ts';
import { formatTable } from '../table.ts';

/**
 * `factory webhook ...` (README.md#commands). One subcommand per function below; lifecycle
 * subcommands (create, enable, disable, rotate, delete, set-secret) add themselves the same way,
 * with `resolveWebhook` to accept a UID or a name.
 */
export function registerWebhook(program: Command, io: CliIO): void {
  const group = program.command('webhook').description('list and inspect webhooks (their UIDs, URLs and secret bindings)')
    .addHelpText('after', '\nExamples:\n  $ factory webhook list\n  $ factory webhook show github\n  $ factory webhook create deploys --factory ops\n');
  addList(group, io);
  addShow(group, io);
  addLifecycle(group, io);
}

/** Finds a webhook by UID, or by name (with `factory` when several factories use the name). */
export async function resolveWebhook(client: Client, uidOrName: string, factory?: string): Promise<WebhookView> {
  if (WEBHOOK_UID_PATTERN.test(uidOrName)) {
    return client.request<WebhookView>('GET', `/api/v1/webhooks/${uidOrName}`);
  }
  const query = factory ? `?factory=${encodeURIComponent(factory)}` : '';
  const { webhooks } = await client.request<{ webhooks: WebhookView[] }>('GET', `/api/v1/webhooks${query}`);
  const found = webhooks.filter((w) => w.name === uidOrName);
  if (found.length === 0) throw new CliError(`no webhook is named '${uidOrName}'${factory ? ` in factory '${factory}'` : ''}; see \`factory webhook list\`.`);
  if (found.length > 1) {
    throw new CliError(`several factories have a webhook named '${uidOrName}' (${found.map((w) => w.factory).join(', ')}); add --factory or use the UID.`);
  }
  return found[0];
}

function addList(group: Command, io: CliIO): void {
  const cmd = group
    .command('list')
    .description('list webhooks with their UID, URL, mode, state and secret binding')
    .option('--factory <name>', 'only this factory')
    .option('--deleted', 'include deleted webhooks')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory webhook list\n  $ factory webhook list --factory payments --json\n');
  addClientOptions(cmd).action(async (opts: ClientFlags & { factory?: string; deleted?: boolean; json?: boolean }) => {
    const client = clientFromFlags(opts, io);
    const params = new URLSearchParams();
    if (opts.factory) params.set('factory', opts.factory);
    if (opts.deleted) params.set('include_deleted', 'true');
    const q = params.toString();
    const { webhooks } = await client.request<{ webhooks: WebhookView[] }>('GET', `/api/v1/webhooks${q ? '?' + q : ''}`);
    if (opts.json) {
      io.stdout(JSON.stringify(webhooks, null, 2) + '\n');
      return;
    }
    if (!webhooks.length) {
      io.stdout(opts.factory ? `Factory ${opts.factory} has no webhooks.\n` : 'No webhooks yet. Define some in webhooks/<name>.yaml and run `factory apply`.\n');
      return;
    }
    const rows = [['FACTORY', 'NAME', 'UID', 'MODE', 'STATE', 'SECRET', 'URL']];
    for (const w of webhooks) {
      rows.push([
        w.factory, w.name, w.uid, w.signature_scheme ? `signature:${w.signature_scheme}` : w.auth_mode,
        w.deleted_at ? 'deleted' : w.enabled ? 'enabled' : 'disabled', `${w.secret_name}@${w.secret_version ?? 'pending'}`, w.url,
      ]);
    }
    io.stdout(formatTable(rows));
  });
}

function addShow(group: Command, io: CliIO): void {
  const cmd = group
    .command('show')
    .description('show one webhook')
    .argument('<uid-or-name>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory webhook show github\n  $ factory webhook show wh_abcdefghijklmnopqrstuvwxyz --json\n');
  addClientOptions(cmd).action(async (uidOrName: string, opts: ClientFlags & { factory?: string; json?: boolean }) => {
    const w = await resolveWebhook(clientFromFlags(opts, io), uidOrName, opts.factory);
    if (opts.json) {
      io.stdout(JSON.stringify(w, null, 2) + '\n');
      return;
    }
    const lines: [string, string | null][] = [
      ['uid', w.uid], ['name', w.name], ['factory', w.factory], ['url', w.url],
      ['auth mode', w.auth_mode], ['signature scheme', w.signature_scheme],
      ['state', w.deleted_at ? `deleted at ${w.deleted_at}` : w.enabled ? 'enabled' : 'disabled'],
      ['secret', `${w.secret_name} (bound to ${w.secret_version === null ? 'no version: the secret is pending' : `version ${w.secret_version}`})`],
      // A graceful rotation's previous version (docs/runtime.md#graceful-rotation).
      ['previous secret', w.previous_secret_version == null ? null : `version ${w.previous_secret_version}, accepted until ${w.previous_secret_until}`],
      ['delivery id header', w.delivery_id_header], ['description', w.description],
      ['managed by', w.managed_by === 'definitions' ? `definitions (${w.source_file ?? '?'})` : w.managed_by],
      ['created', w.created_at], ['updated', w.updated_at],
    ];
    io.stdout(lines.filter(([, v]) => v !== null).map(([k, v]) => `${(k + ':').padEnd(20)}${v}\n`).join(''));
  });
}

