import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { CliError, usageError } from '../../core/errors.ts';
import { SIGNATURE_SCHEMES } from '../../core/snapshot.ts';
import { addClientOptions, clientFromFlags, nonEmpty, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import type { WebhookView } from '../../runtime/definitions/views.ts';
import { decode, readAll, stripOneNewline } from './secret.ts';
import { resolveWebhook } from './webhook.ts';

/**
 * `factory webhook create|enable|disable|rotate|delete|set-secret`
 * (docs/ingress.md#webhook-lifecycle, README.md#commands). A provider secret is read from stdin
 * (`--secret-stdin`, or always for set-secret), never from argv. Generated secrets are printed
 * once, with a warning that they are not shown again.
 */

interface LifecycleAnswer {
  webhook: WebhookView;
  secret?: string;
  url?: string;
  next_step?: string;
}

type Flags = ClientFlags & { factory?: string; json?: boolean; secretStdin?: boolean };

export function addLifecycle(group: Command, io: CliIO): void {
  const create = group
    .command('create')
    .description('create a webhook on an API-managed factory (the factory is created if it does not exist)')
    .argument('<name>', 'the webhook name', nonEmpty('webhook name'))
    .requiredOption('--factory <name>', 'the factory')
    .option('--auth-mode <mode>', 'token, url_token or signature', 'token')
    .option('--scheme <scheme>', `signature scheme: ${SIGNATURE_SCHEMES.join(', ')}`)
    .option('--secret-name <name>', 'team secret to bind or create (default <factory>-<name>-secret)')
    .option('--secret-stdin', "read the provider's signing secret from stdin (signature mode)")
    .option('--delivery-id-header <header>', "header in which the sender puts its own event id")
    .option('--description <text>', 'shown in listings')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory webhook create deploys --factory ops\n' +
        '  $ factory webhook create events --factory ops --auth-mode signature --scheme standard-webhooks\n' +
        '  $ printf %s "$GITHUB_SECRET" | factory webhook create gh --factory ops --auth-mode signature --scheme github --secret-stdin\n' +
        '  $ factory webhook create paddle --factory ops --auth-mode signature --scheme paddle   # then: set-secret\n',
    );
  addClientOptions(create).action(
    async (name: string, opts: Flags & { authMode: string; scheme?: string; secretName?: string; deliveryIdHeader?: string; description?: string }) => {
      const body: Record<string, unknown> = { name, auth_mode: opts.authMode };
      if (opts.scheme) body.signature_scheme = opts.scheme;
      if (opts.secretName) body.secret_name = opts.secretName;
      if (opts.deliveryIdHeader) body.delivery_id_header = opts.deliveryIdHeader;
      if (opts.description) body.description = opts.description;
      if (opts.secretStdin) body.secret = await readStdinSecret(io);
      const client = clientFromFlags(opts, io);
      const answer = await client.request<LifecycleAnswer>('POST', `/api/v1/factories/${encodeURIComponent(opts.factory!)}/webhooks`, body);
      print(io, answer, opts.json, `Created webhook ${answer.webhook.name} (${answer.webhook.uid})`);
    },
  );

  simple(group, io, 'enable', 'enable a webhook; it re-binds to the current version of its secret', 'enable');
  simple(group, io, 'disable', 'disable a webhook: its URL answers 404 at once; the log and automations are kept', 'disable');
  simple(group, io, 'delete', 'delete an API-created webhook: its URL answers 404 for good', 'delete');

  const rotate = group
    .command('rotate')
    .description('give a webhook a new secret, shown once; the old one stops working at once')
    .argument('<uid-or-name>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--secret-stdin', "read the provider's new signing secret from stdin (signature schemes other than standard-webhooks)")
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory webhook rotate deploys\n  $ printf %s "$NEW" | factory webhook rotate gh --secret-stdin\n');
  addClientOptions(rotate).action(async (ref: string, opts: Flags) => {
    const client = clientFromFlags(opts, io);
    const w = live(await resolveWebhook(client, ref, opts.factory), 'rotated');
    const body = opts.secretStdin ? { secret: await readStdinSecret(io) } : {};
    const answer = await client.request<LifecycleAnswer>('POST', `/api/v1/webhooks/${w.uid}/rotate`, body);
    print(io, answer, opts.json, `Rotated the secret of ${w.name} (now version ${answer.webhook.secret_version})`);
  });

  const setSecret = group
    .command('set-secret')
    .description("give a signature webhook the provider's signing secret (from stdin) and enable it")
    .argument('<uid-or-name>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ printf %s "$PADDLE_SECRET" | factory webhook set-secret paddle\n');
  addClientOptions(setSecret).action(async (ref: string, opts: Flags) => {
    const client = clientFromFlags(opts, io);
    const w = live(await resolveWebhook(client, ref, opts.factory), 'given a secret');
    const secret = await readStdinSecret(io);
    const answer = await client.request<LifecycleAnswer>('POST', `/api/v1/webhooks/${w.uid}/secret`, { secret });
    print(io, answer, opts.json, `Set the secret of ${w.name}; the webhook is enabled`);
  });
}

function simple(group: Command, io: CliIO, name: 'enable' | 'disable' | 'delete', description: string, verb: string): void {
  const cmd = group
    .command(name)
    .description(description)
    .argument('<uid-or-name>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--json', 'print JSON')
    .addHelpText('after', `\nExamples:\n  $ factory webhook ${name} deploys\n  $ factory webhook ${name} wh_abcdefghijklmnopqrstuvwxyz --json\n`);
  addClientOptions(cmd).action(async (ref: string, opts: Flags) => {
    const client = clientFromFlags(opts, io);
    const w = live(await resolveWebhook(client, ref, opts.factory), name === 'delete' ? 'deleted' : name === 'enable' ? 'enabled' : 'disabled');
    const answer =
      name === 'delete'
        ? await client.request<LifecycleAnswer>('DELETE', `/api/v1/webhooks/${w.uid}`)
        : await client.request<LifecycleAnswer>('POST', `/api/v1/webhooks/${w.uid}/${verb}`);
    print(io, answer, opts.json, `${name === 'delete' ? 'Deleted' : name === 'enable' ? 'Enabled' : 'Disabled'} webhook ${w.name} (${w.uid})`);
  });
}

/**
 * A UID finds a deleted webhook too (`webhook show` shows it as deleted), and a deleted one stays
 * deleted for good (docs/ingress.md#webhook-lifecycle): say so, rather than the runtime's "no
 * webhook has the UID" for a webhook `show` has just found.
 */
function live(w: WebhookView, done: 'enabled' | 'disabled' | 'deleted' | 'rotated' | 'given a secret'): WebhookView {
  if (!w.deleted_at) return w;
  const which = `the webhook ${w.factory}/${w.name} (${w.uid})`;
  if (done === 'deleted') throw new CliError(`${which} was already deleted at ${w.deleted_at}.`);
  throw new CliError(`${which} was deleted at ${w.deleted_at}, so it cannot be ${done}: a deleted webhook stays deleted.`);
}

function print(io: CliIO, answer: LifecycleAnswer, json: boolean | undefined, headline: string): void {
  if (json) {
    io.stdout(JSON.stringify(answer, null, 2) + '\n');
    return;
  }
  const w = answer.webhook;
  io.stdout(`${headline}.\n`);
  io.stdout(`  url:     ${answer.url ?? w.url}\n`);
  io.stdout(`  state:   ${w.deleted_at ? 'deleted' : w.enabled ? 'enabled' : 'disabled'}\n`);
  io.stdout(`  secret:  ${w.secret_name} (${w.secret_version === null ? 'pending' : `version ${w.secret_version}`})\n`);
  if (answer.secret !== undefined) {
    io.stdout(`\n  ${w.auth_mode === 'token' ? 'Bearer token' : w.auth_mode === 'url_token' ? 'URL token' : 'Signing secret'}: ${answer.secret}\n`);
    io.stdout('  Save it now: it is not shown again.\n');
  }
  if (answer.next_step) io.stdout(`\nNext: ${answer.next_step}\n`);
}

/**
 * The secret piped on stdin, minus one trailing newline, refused when it is not UTF-8 text, as a
 * team secret's value is (docs/runtime.md#team-secrets). Never from argv.
 */
async function readStdinSecret(io: CliIO): Promise<string> {
  if (io.stdinIsTTY) throw usageError('pipe the secret on stdin, e.g. printf %s "$SECRET" | factory webhook ...');
  const text = stripOneNewline(decode(await readAll(io.stdin as Readable), 'stdin'));
  if (text === '') throw new CliError('the secret on stdin is empty.');
  return text;
}
