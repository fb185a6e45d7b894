import type { Command } from 'commander';
import { usageError } from '../../core/errors.ts';
import { addClientOptions, clientFromFlags, nonEmpty, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import { jsonValueDepth } from '../../core/json-depth.ts';
import { resolveWebhook } from './webhook.ts';
import { formatTable } from '../table.ts';
import { visible } from '../terminal.ts';

/** Deeper payloads are not indented (nor re-serialised) by `delivery show`. */
const MAX_PRINT_DEPTH = 1000;

/** `factory delivery list|show` (docs/ingress.md#delivery-log, README.md#commands): a webhook's delivery log, newest first. */

export interface DeliveryView {
  delivery_id: string;
  webhook_uid: string;
  outcome: string;
  outcome_label: string;
  reason: string | null;
  size: number;
  received_at: string;
  sender: string | null;
  content_type: string | null;
  user_agent: string | null;
  has_payload: boolean;
  /** The secret version that authenticated it (docs/runtime.md#graceful-rotation); null for rejections. */
  secret_version?: number | null;
  payload?: unknown;
  /** The runs an Accepted delivery started (docs/ingress.md#delivery-log, docs/automations.md); empty for other outcomes. */
  runs?: DeliveryRun[];
}

export interface DeliveryRun {
  run_id: string;
  automation: string | null;
  state: string;
  /** Set when a replay started the run (docs/ingress.md#replay). */
  replay?: { by: { type: string; name: string }; at: string };
}

type Flags = ClientFlags & { factory?: string; json?: boolean };

export function registerDelivery(program: Command, io: CliIO): void {
  const group = program.command('delivery').description("read a webhook's delivery log")
    .addHelpText('after', '\nExamples:\n  $ factory delivery list github\n  $ factory delivery show github 72d3162e-cc78-11e3-81ab-4c9367dc0958\n');

  const list = group
    .command('list')
    .description('list deliveries of a webhook, newest first')
    .argument('<webhook>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--limit <n>', 'how many (1 to 100)', '20')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory delivery list github\n  $ factory delivery list wh_abcdefghijklmnopqrstuvwxyz --limit 100 --json\n');
  addClientOptions(list).action(async (ref: string, opts: Flags & { limit: string }) => {
    const limit = Number(opts.limit);
    if (!/^\d+$/.test(opts.limit) || limit < 1 || limit > 100) throw usageError(`--limit must be an integer from 1 to 100, got "${opts.limit}".`);
    const client = clientFromFlags(opts, io);
    const w = await resolveWebhook(client, ref, opts.factory);
    const { deliveries } = await client.request<{ deliveries: DeliveryView[] }>('GET', `/api/v1/webhooks/${w.uid}/deliveries?limit=${limit}`);
    if (opts.json) {
      io.stdout(JSON.stringify(deliveries, null, 2) + '\n');
      return;
    }
    if (!deliveries.length) {
      io.stdout(`Webhook ${w.name} has no deliveries in its log.\n`);
      return;
    }
    // The runs themselves, not a count: the next step is usually `factory run transcript RUN`.
    const rows = [['RECEIVED', 'OUTCOME', 'SIZE', 'DELIVERY ID', 'RUNS']];
    for (const d of deliveries) rows.push([d.received_at, d.outcome_label, String(d.size), d.delivery_id, (d.runs ?? []).map((r) => r.run_id).join(', ') || '-']);
    io.stdout(formatTable(rows));
  });

  const show = group
    .command('show')
    .description('show one delivery, with the runs it started and its payload when it was Accepted')
    .argument('<webhook>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .argument('<delivery-id>', 'the delivery id (as `delivery list` shows it)', nonEmpty('delivery id'))
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory delivery show github 72d3162e-cc78-11e3-81ab-4c9367dc0958\n');
  addClientOptions(show).action(async (ref: string, id: string, opts: Flags) => {
    const client = clientFromFlags(opts, io);
    const w = await resolveWebhook(client, ref, opts.factory);
    const res = await client.send<DeliveryView>('GET', `/api/v1/webhooks/${w.uid}/deliveries/${encodeURIComponent(id)}`);
    const d = res.body;
    // JSON.stringify recurses: a payload nested thousands of levels deep (a sender may send one)
    // would overflow the stack, so such a payload is never re-serialised.
    const printable = d.payload === undefined || jsonValueDepth(d.payload, MAX_PRINT_DEPTH) <= MAX_PRINT_DEPTH;
    if (opts.json) {
      io.stdout((printable ? JSON.stringify(d, null, 2) : res.text.trim()) + '\n');
      return;
    }
    const lines: [string, string | null][] = [
      ['delivery id', d.delivery_id], ['webhook', `${w.name} (${w.uid})`], ['outcome', d.outcome_label + (d.reason ? ` (${d.reason})` : '')],
      ['secret', d.secret_version == null ? null : `version ${d.secret_version}`],
      ['size', `${d.size} bytes`], ['received', d.received_at], ['sender', d.sender], ['content type', d.content_type], ['user agent', d.user_agent],
    ];
    // The delivery id, the user agent and the payload are whatever the sender sent: shown through
    // `visible`, so no control character of theirs reaches the terminal (README.md#commands).
    io.stdout(visible(lines.filter(([, v]) => v !== null).map(([k, v]) => `${(k + ':').padEnd(14)}${v}\n`).join('')));
    const runs = d.runs ?? [];
    if (runs.length) {
      // The REPLAY column only when a replay started some of them (docs/ingress.md#replay).
      const replays = runs.some((r) => r.replay);
      const rows = formatTable([
        ['RUN', 'AUTOMATION', 'STATE', ...(replays ? ['REPLAY'] : [])],
        ...runs.map((r) => [r.run_id, r.automation ?? '', r.state, ...(replays ? [r.replay ? `by ${r.replay.by.name}` : ''] : [])]),
      ]);
      io.stdout('runs:\n' + rows.split('\n').filter(Boolean).map((l) => `  ${l}\n`).join(''));
    } else if (d.outcome === 'accepted') {
      io.stdout(`${'runs:'.padEnd(14)}none (no automation matched)\n`);
    }
    if (d.payload === undefined) return;
    // JSON.stringify escapes C0 controls only; DEL and C1 (U+0080 to U+009F) are left to `visible`.
    if (printable) io.stdout(`payload:\n${visible(JSON.stringify(d.payload, null, 2))}\n`);
    else io.stdout(`${'payload:'.padEnd(14)}nested more than ${MAX_PRINT_DEPTH} levels deep, too deep to indent; \`--json\` prints it as stored\n`);
  });

  const replay = group
    .command('replay')
    .description("start runs again from an Accepted delivery's stored payload, against the automations as they are now")
    .argument('<webhook>', 'a webhook UID (wh_...) or name', nonEmpty('webhook UID or name'))
    .argument('<delivery-id>', 'the delivery id (as `delivery list` shows it)', nonEmpty('delivery id'))
    .option('--automation <name>', 'only this automation (it must still match the payload)')
    .option('--factory <name>', 'the factory, when several have a webhook with that name')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory delivery replay github 72d3162e-cc78-11e3-81ab-4c9367dc0958\n  $ factory delivery replay github 72d3162e-cc78-11e3-81ab-4c9367dc0958 --automation review\n');
  addClientOptions(replay).action(async (ref: string, id: string, opts: Flags & { automation?: string }) => {
    const client = clientFromFlags(opts, io);
    const w = await resolveWebhook(client, ref, opts.factory);
    const body = opts.automation === undefined ? {} : { automation: opts.automation };
    const out = await client.request<{ runs: DeliveryRun[]; detail?: string }>('POST', `/api/v1/webhooks/${w.uid}/deliveries/${encodeURIComponent(id)}/replay`, body);
    if (opts.json) return void io.stdout(JSON.stringify(out, null, 2) + '\n');
    if (!out.runs.length) return void io.stdout(`${out.detail ?? 'No automation matches this delivery now; no run was started.'}\n`);
    io.stdout(formatTable([['RUN', 'AUTOMATION', 'STATE'], ...out.runs.map((r) => [r.run_id, r.automation ?? '', r.state])]));
  });
}
