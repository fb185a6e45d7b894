import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { CliError, usageError } from '../../core/errors.ts';
import { addClientOptions, clientFromFlags, collect, nonEmpty, type Client, type ClientFlags } from '../client.ts';
import { fsReason, type CliIO } from '../io.ts';
import { formatTable } from '../table.ts';
import type { WebhookView } from '../../runtime/definitions/views.ts';
import type { SecretUpdate } from '../../runtime/ingress/lifecycle.ts';
import type { SecretMeta } from '../../runtime/store/secrets.ts';
import secretUpdateSchema from '../../schemas/api/secret-update.schema.json' with { type: 'json' };

interface ValueFlags extends ClientFlags {
  fromFile?: string;
  pending?: boolean;
  factory?: string[];
  grace?: string;
}

const GRACE_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
/** The API's limit (30 days), from the request body's schema so the two cannot disagree. */
const MAX_GRACE_SECONDS = secretUpdateSchema.properties.grace_seconds.maximum;

/** `--grace 24h` → seconds: whole numbers with s, m, h or d, one after another (`1d12h`), or `0`. */
export function parseGrace(text: string): number {
  const t = text.trim();
  if (t === '0') return 0;
  let seconds = 0;
  const rest = t.replace(/(\d{1,9})([smhd])/g, (_, n: string, unit: string) => {
    seconds += Number(n) * GRACE_UNITS[unit];
    return '';
  });
  if (t === '' || rest !== '' || seconds > MAX_GRACE_SECONDS) {
    throw usageError(`--grace must be a duration such as 24h, 90m or 7d, at most 30d (0: no grace), got "${text}".`);
  }
  return seconds;
}

interface FactoryFlags extends ClientFlags {
  factory: string[];
  all?: boolean;
}

/** "all", or the factories that may use the secret. */
const usableBy = (meta: SecretMeta) => (meta.factories === null ? 'all' : meta.factories.join(','));

/**
 * `factory secret create|update|list|delete|grant|revoke|limit`. A value comes from stdin (when
 * it is not a terminal), `--from-file`, or a hidden prompt; never from argv, where `ps` and shell
 * history would see it. `--factory` limits which factories may use a secret
 * (docs/runtime.md#which-factories-may-use-a-secret).
 */
export function registerSecret(program: Command, io: CliIO): void {
  const secret = program.command('secret').description('manage team secrets (admin scope); values are write-only')
    .addHelpText('after', '\nExamples:\n  $ printf %s "$TOKEN" | factory secret create ci-token\n  $ factory secret update ci-token        # asks for the value, hidden\n  $ factory secret list\n  $ factory secret grant ci-token --factory payments\n');

  addClientOptions(
    secret
      .command('create')
      .description('create a team secret: the value from stdin, --from-file or a hidden prompt')
      .argument('<name>', 'secret name: letters, digits, _ . -', nonEmpty('secret name'))
      .option('--from-file <path>', 'read the value from this file')
      .option('--pending', 'create it without a value (set it later with `secret update`)')
      .option('--factory <name>', 'only this factory may use it; repeat for several (default: every factory)', collect, []),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ printf %s "$GITHUB_WEBHOOK_SECRET" | factory secret create github-signing\n  $ factory secret create stripe-signing --from-file ./whsec.txt\n  $ factory secret create paddle-signing --pending --factory payments\n\nOne trailing newline (\\n or \\r\\n) is removed from a value read from stdin or a file; nothing else is trimmed.\nWithout --factory every factory may use the secret (in webhooks and environments); with it, only the factories named.\n',
    )
    .action(async (name: string, flags: ValueFlags) => {
      if (flags.pending && flags.fromFile) throw usageError('--pending creates a secret without a value; drop --from-file or --pending.');
      const client = clientFromFlags(flags, io);
      const factories = flags.factory?.length ? { factories: flags.factory } : {};
      const body = flags.pending ? { name, pending: true, ...factories } : { name, value: await readValue(io, flags, name, 'create'), ...factories };
      const meta = await client.request<SecretMeta>('POST', '/api/v1/secrets', body);
      const state = meta.has_value ? `version ${meta.current_version}` : 'pending: no value yet';
      const only = meta.factories === null ? '' : `; only factory ${meta.factories.join(', ')} may use it`;
      io.stdout(`created secret ${meta.name} (${state}${only})\n`);
    });

  addClientOptions(
    secret
      .command('update')
      .description('set a new value (a new version): from stdin, --from-file or a hidden prompt')
      .argument('<name>', 'secret name', nonEmpty('secret name'))
      .option('--from-file <path>', 'read the value from this file')
      .option('--grace <duration>', 'move the webhooks that use the secret to the new value now, and let the previous value verify too for this long (e.g. 24h; at most 30d)'),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory secret update github-signing < new-secret.txt\n  $ factory secret update github-signing --grace 24h < new-secret.txt\n\nWithout --grace, webhooks stay bound to the version they were applied or enabled with: re-apply their factory (definitions-managed), or run `factory webhook enable` on them, to use the new value; the update names the webhooks that need it.\nWith --grace, every webhook that uses the secret takes the new value at once and also accepts the previous one until the grace ends (docs/runtime.md#graceful-rotation).\n',
    )
    .action(async (name: string, flags: ValueFlags) => {
      const graceSeconds = flags.grace === undefined ? undefined : parseGrace(flags.grace);
      const client = clientFromFlags(flags, io);
      // Before a value is typed at the prompt: a secret that does not exist is said at once.
      if (!flags.fromFile && io.stdinIsTTY) await client.request<SecretMeta>('GET', `/api/v1/secrets/${encodeURIComponent(name)}`);
      const value = await readValue(io, flags, name, 'update');
      const body = graceSeconds === undefined ? { value } : { value, grace_seconds: graceSeconds };
      const meta = await client.request<SecretMeta & Pick<SecretUpdate, 'grace'>>('PUT', `/api/v1/secrets/${encodeURIComponent(name)}`, body);
      io.stdout(`updated secret ${meta.name} (version ${meta.current_version})\n`);
      if (meta.grace) {
        const hooks = meta.grace.webhooks.map((w) => `${w.factory}/${w.name}`).join(', ');
        if (!meta.grace.webhooks.length) io.stdout('no webhook is bound to it, so there was nothing to move\n');
        else if (meta.grace.until === null) io.stdout(`moved to version ${meta.current_version} at once, the previous value no longer verifies: ${hooks}\n`);
        else io.stdout(`moved to version ${meta.current_version}; the previous value also verifies until ${meta.grace.until}: ${hooks}\n`);
      }
      // A grace moves only the webhooks bound to a version: one held disabled while the secret was pending still needs its hint.
      await hintStaleBindings(client, io, meta);
    });

  addClientOptions(secret.command('list').description('list team secrets (names and versions, never values)').option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory secret list --json\n')
    .action(async (flags: ClientFlags & { json?: boolean }) => {
      const { secrets } = await clientFromFlags(flags, io).request<{ secrets: SecretMeta[] }>('GET', '/api/v1/secrets');
      if (flags.json) {
        io.stdout(JSON.stringify(secrets, null, 2) + '\n');
        return;
      }
      const rows = secrets.map((s) => [s.name, String(s.current_version), s.has_value ? 'set' : 'pending', usableBy(s), s.updated_at]);
      io.stdout(formatTable([['NAME', 'VERSION', 'VALUE', 'FACTORIES', 'UPDATED'], ...rows]));
    });

  const factoryOption = (help: string) => ['--factory <name>', help, collect, [] as string[]] as const;
  /** grant, revoke and limit: one call that changes who may use the secret, then say who may now. */
  const changeUsers = async (flags: ClientFlags, name: string, method: 'POST' | 'PUT', action: 'grant' | 'revoke' | 'factories', factories: string[] | null) => {
    const meta = await clientFromFlags(flags, io).request<SecretMeta>(method, `/api/v1/secrets/${encodeURIComponent(name)}/${action}`, { factories });
    io.stdout(`secret ${meta.name} may be used by: ${meta.factories === null ? 'every factory' : meta.factories.join(', ')}\n`);
  };

  addClientOptions(
    secret
      .command('grant')
      .description('let more factories use a secret, or with --all every factory')
      .argument('<name>', 'secret name', nonEmpty('secret name'))
      .option(...factoryOption('the factory to allow; repeat for several'))
      .option('--all', 'let every factory use it (team-wide)'),
  )
    .addHelpText('after', '\nExamples:\n  $ factory secret grant pay-token --factory billing\n  $ factory secret grant shared-token --all\n\nA team-wide secret has no list to add to: name its factories with `factory secret limit` instead.\n')
    .action(async (name: string, flags: FactoryFlags) => {
      if (flags.all && flags.factory.length) throw usageError('--all already includes every factory; drop --factory or --all.');
      if (!flags.all && !flags.factory.length) throw usageError('name a factory with --factory NAME, or use --all.');
      // --all is the team-wide list (null), which only the `factories` route sets.
      await (flags.all ? changeUsers(flags, name, 'PUT', 'factories', null) : changeUsers(flags, name, 'POST', 'grant', flags.factory));
    });

  addClientOptions(
    secret
      .command('revoke')
      .description('stop factories from using a secret (refused while they still use it)')
      .argument('<name>', 'secret name', nonEmpty('secret name'))
      .option(...factoryOption('the factory to take off; repeat for several')),
  )
    .addHelpText('after', '\nExample:\n  $ factory secret revoke pay-token --factory billing\n\nRefused while the factory still has a webhook or an environment using the secret, and when no factory would be left (delete the secret instead).\n')
    .action(async (name: string, flags: FactoryFlags) => {
      if (!flags.factory.length) throw usageError('name the factory to take off with --factory NAME.');
      await changeUsers(flags, name, 'POST', 'revoke', flags.factory);
    });

  addClientOptions(
    secret
      .command('limit')
      .description('set exactly which factories may use a secret (e.g. to limit a team-wide one)')
      .argument('<name>', 'secret name', nonEmpty('secret name'))
      .option(...factoryOption('a factory that may use it; repeat for several')),
  )
    .addHelpText('after', '\nExample:\n  $ factory secret limit ci-token --factory shop --factory blog\n\nRefused while a factory left out still uses the secret. `factory secret grant NAME --all` makes it team-wide again.\n')
    .action(async (name: string, flags: FactoryFlags) => {
      if (!flags.factory.length) throw usageError('name the factories that may use it with --factory NAME (repeat for several).');
      await changeUsers(flags, name, 'PUT', 'factories', flags.factory);
    });

  addClientOptions(secret.command('delete').description('delete a team secret and all its versions').argument('<name>', 'secret name', nonEmpty('secret name')))
    .addHelpText('after', '\nExample:\n  $ factory secret delete old-token\n')
    .action(async (name: string, flags: ClientFlags) => {
      await clientFromFlags(flags, io).request('DELETE', `/api/v1/secrets/${encodeURIComponent(name)}`);
      io.stdout(`deleted secret ${name}\n`);
    });
}

/** The value of a create/update: --from-file, else stdin when piped, else a hidden prompt. */
async function readValue(io: CliIO, flags: ValueFlags, name: string, command: 'create' | 'update'): Promise<string> {
  let value: string;
  if (flags.fromFile) {
    const bytes = await readFile(resolve(io.cwd, flags.fromFile)).catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`cannot read ${flags.fromFile}: ${fsReason(err)}`);
    });
    value = stripOneNewline(decode(bytes, flags.fromFile));
  } else if (!io.stdinIsTTY) {
    value = stripOneNewline(decode(await readAll(io.stdin), 'stdin'));
  } else {
    value = await promptHidden(io, `value for ${name} (input is hidden): `);
  }
  if (value === '') {
    // Only `create` has --pending; `update` always sets a value.
    const orPending = command === 'create' ? ', or create the secret with --pending' : '';
    throw new CliError(`the value is empty; pipe it on stdin or use --from-file${orPending}.`);
  }
  return value;
}

/** `echo` and editors add one trailing newline; remove exactly one (`\n` or `\r\n`; docs/runtime.md#team-secrets). */
export function stripOneNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

/** UTF-8 text, or one sentence naming the source: a byte that is not UTF-8 is refused, never turned into U+FFFD. */
export function decode(bytes: Buffer, source: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(`the value from ${source} is not valid UTF-8 text.`);
  }
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

/**
 * Reads one line from a terminal without echoing it (docs/runtime.md#team-secrets). Raw mode turns
 * off the terminal's own line editing, so the keys of a password prompt are handled here: Backspace
 * erases a character, Ctrl-U the line, Ctrl-W the last word, Ctrl-C cancels. Any other control
 * character or escape sequence (Tab, an arrow key) is never stored: the line is still read to its
 * end, hidden, so the rest of it does not land on the shell's command line, and then refused.
 */
function promptHidden(io: CliIO, label: string): Promise<string> {
  const stdin = io.stdin as Readable & { setRawMode?: (mode: boolean) => void };
  io.stderr(label);
  return new Promise((resolvePromise, reject) => {
    let value = '';
    let refused: string | undefined;
    const raw = typeof stdin.setRawMode === 'function';
    if (raw) stdin.setRawMode!(true);
    stdin.setEncoding('utf8');
    const finish = (err?: Error) => {
      stdin.off('data', onData);
      if (raw) stdin.setRawMode!(false);
      stdin.pause();
      io.stderr('\n');
      if (err) reject(err);
      else resolvePromise(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          if (refused === undefined) return finish();
          return finish(new CliError(`the value typed held ${refused}, which the prompt does not take, so nothing was stored; type it again, or pipe it on stdin or use --from-file.`));
        }
        if (ch === '\u0003') return finish(new CliError('cancelled', 130));
        if (ch === '\u007f' || ch === '\b') value = Array.from(value).slice(0, -1).join('');
        else if (ch === '\u0015') value = '';
        else if (ch === '\u0017') value = value.replace(/\S*\s*$/u, '');
        else if (/^[\u0000-\u001f\u0080-\u009f]$/u.test(ch)) refused ??= ch === '\u001b' ? 'an escape sequence (an arrow or function key)' : `the control character U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
        else value += ch;
      }
    };
    stdin.on('data', onData);
    stdin.resume();
  });
}

/**
 * Webhooks keep the secret version they were applied or enabled with
 * (docs/ingress.md#webhook-lifecycle), so after an update say which ones still use an older value,
 * and which were held disabled while the secret was pending, and the command that binds the new
 * version: `factory apply` only for a definitions-managed factory (apply refuses an API-managed
 * one), `factory webhook enable` for any. A disabled webhook that has a version needs nothing: its
 * next enable binds the current one. Best effort: a key that may not list webhooks gets no hint.
 */
async function hintStaleBindings(client: Client, io: CliIO, meta: SecretMeta): Promise<void> {
  let webhooks: WebhookView[];
  try {
    ({ webhooks } = await client.request<{ webhooks: WebhookView[] }>('GET', `/api/v1/webhooks`));
  } catch {
    return;
  }
  const users = webhooks.filter((w) => w.secret_name === meta.name && !w.deleted_at);
  const stale = users.filter((w) => w.enabled && w.secret_version !== null && w.secret_version < meta.current_version);
  const pending = users.filter((w) => !w.enabled && w.secret_version === null);
  const version = meta.current_version;
  for (const group of [stale.filter(byDefinitions), stale.filter((w) => !byDefinitions(w))]) {
    if (!group.length) continue;
    const one = group.length === 1;
    const names = group.map((w) => `${w.factory}/${w.name} (version ${w.secret_version})`).join(', ');
    const how = byDefinitions(group[0])
      ? `Run \`factory apply\` for ${one ? 'its' : 'their'} factory, or disable and enable ${one ? 'it' : 'them'},`
      : `Run ${enableCommands(group)}`;
    io.stderr(`${one ? 'This webhook still uses' : 'These webhooks still use'} an older value: ${names}. ${how} to move to version ${version}.\n`);
  }
  for (const group of [pending.filter(byDefinitions), pending.filter((w) => !byDefinitions(w))]) {
    if (!group.length) continue;
    const one = group.length === 1;
    const names = group.map((w) => `${w.factory}/${w.name}`).join(', ');
    const how = byDefinitions(group[0])
      ? `Run \`factory apply\` for ${one ? 'its' : 'their'} factory, or ${enableCommands(group)},`
      : `Run ${enableCommands(group)}`;
    io.stderr(
      `${one ? 'This webhook was' : 'These webhooks were'} held disabled while the secret had no value, and ${one ? 'is' : 'are'} still disabled: ${names}. ` +
        `${how} to bind version ${version} and enable ${one ? 'it' : 'them'}.\n`,
    );
  }
}

const byDefinitions = (w: WebhookView) => w.managed_by === 'definitions';

/** `factory webhook enable wh_...` for each webhook: enabling binds the secret's current version. */
const enableCommands = (webhooks: WebhookView[]) => webhooks.map((w) => `\`factory webhook enable ${w.uid}\``).join(' and ');
