import type { Command } from 'commander';
import { CliError, FactoryError, exitWith } from '../../core/errors.ts';
import { WEBHOOK_UID_PATTERN } from '../../core/ids.ts';
import { addClientOptions, clientFromFlags, type Client, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import type { ScheduleItem } from '../../runtime/routes/schedules.ts';
import { formatTable } from '../table.ts';

/** `factory automation list | test NAME --delivery ID | pause|resume SCHEDULE` (docs/automations.md, README.md#commands). */

export interface AutomationView {
  factory: string;
  name: string;
  title: string | null;
  enabled: boolean;
  environment: string;
  triggers: { webhook_uid: string | null; webhook_name: string | null; webhook_state: string; payload: unknown }[];
  silent: boolean;
  silent_reason?: string;
  source_file: string;
  /** Its schedule triggers with their next fire time, from GET /api/v1/agent/schedules (docs/api.md#schedules). */
  schedules?: ScheduleView[];
}

/** What `automation list` shows of a schedule item of the API. */
type ScheduleView = Pick<ScheduleItem, 'id' | 'name' | 'cron_schedule' | 'enabled' | 'paused' | 'history' | 'factory' | 'automation'>;

export interface TestFilterView {
  automation: { factory: string; name: string };
  delivery: { delivery_id: string; webhook_uid: string; webhook_name: string; outcome: string; received_at: string };
  would_trigger: boolean;
  webhook_check: { passed: boolean; detail: string };
  payload_check: { passed: boolean; trigger?: number; path?: string; path_segments?: string[]; reason?: string; detail: string };
  automation_enabled: boolean;
  note?: string;
}

type Flags = ClientFlags & { factory?: string; json?: boolean };

const TEST_HELP = `
Tests the automation's triggers against a delivery stored in the log (an Accepted one: only those
keep their payload), including deliveries older than the automation. The answer is the one live
matching gives: Would trigger / Would not trigger, with the webhook check (does a trigger select
the webhook that received the delivery?) and the payload check (does its payload filter match?
if not, the first failing key path and why).

Examples:
  $ factory automation test review-prs --delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958
  Would not trigger
    webhook check: passed: trigger 0 selects webhook github (wh_...), which received this delivery
    payload check: failed
      key path: action
      reason:   "closed" is not one of "opened", "reopened"
  $ factory automation test review-prs --factory shop --delivery 72d3162e-... --json

Exit status: 0 when the delivery would trigger the automation; 1 when it would not, or on an error.
`;

export function registerAutomation(program: Command, io: CliIO): void {
  const group = program.command('automation').description('list automations, test their filters against stored deliveries, pause and resume their schedules')
    .addHelpText('after', '\nExamples:\n  $ factory automation list\n  $ factory automation test triage-pr --delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958\n  $ factory automation pause shop/nightly/#0\n');

  const list = group
    .command('list')
    .description('list automations with their triggers and schedules (with the next fire time, UTC); silent ones (every webhook deleted or unknown) say why')
    .option('--factory <name>', 'only this factory')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  $ factory automation list\n  $ factory automation list --factory shop --json\n');
  addClientOptions(list).action(async (opts: Flags) => {
    const client = clientFromFlags(opts, io);
    const automations = await listAutomations(client, opts.factory);
    if (opts.json) {
      io.stdout(JSON.stringify(automations, null, 2) + '\n');
      return;
    }
    if (!automations.length) {
      io.stdout(opts.factory ? `Factory ${opts.factory} has no automations.\n` : 'No automations yet. Define some in automations/<name>.md and run `factory apply`.\n');
      return;
    }
    const rows = [['FACTORY', 'NAME', 'STATE', 'ENVIRONMENT', 'WEBHOOKS', 'SCHEDULES']];
    for (const a of automations) {
      const webhooks = a.triggers.map(webhookLabel).join(', ') || '-';
      const schedules = (a.schedules ?? []).map(scheduleLabel).join(', ') || '-';
      rows.push([a.factory, a.name, a.silent ? 'silent' : a.enabled ? 'enabled' : 'disabled', a.environment, webhooks, schedules]);
    }
    io.stdout(formatTable(rows));
    for (const a of automations.filter((x) => x.silent)) io.stdout(`\n${a.factory}/${a.name} is silent: ${a.silent_reason}.\n`);
  });

  const test = group
    .command('test')
    .description('would this stored delivery trigger the automation? (Test filter)')
    .argument('<name>', 'the automation name')
    .requiredOption('--delivery <id>', 'the delivery id, as `factory delivery list` shows it')
    .option('--factory <name>', 'the factory, when several have an automation with that name')
    .option('--webhook <uid>', 'the webhook UID, when the delivery id is in the log of several webhooks')
    .option('--json', 'print JSON')
    .addHelpText('after', TEST_HELP);
  addClientOptions(test).action(async (name: string, opts: Flags & { delivery: string; webhook?: string }) => {
    if (opts.webhook !== undefined && !WEBHOOK_UID_PATTERN.test(opts.webhook)) throw new CliError(`--webhook takes a webhook UID (wh_...), got "${opts.webhook}".`, 2);
    const client = clientFromFlags(opts, io);
    const factory = opts.factory ?? (await factoryOf(client, name));
    const body: Record<string, string> = { delivery_id: opts.delivery };
    if (opts.webhook) body.webhook_uid = opts.webhook;
    const answer = await client.request<TestFilterView>('POST', `/api/v1/automations/${encodeURIComponent(factory)}/${encodeURIComponent(name)}/test`, body);
    io.stdout(opts.json ? JSON.stringify(answer, null, 2) + '\n' : formatTestFilter(answer));
    if (!answer.would_trigger) throw exitWith(1);
  });

  for (const [verb, description, done] of [
    ['pause', 'pause a schedule trigger: it does not fire until resumed (pausing a paused one changes nothing)', 'paused'],
    ['resume', 'resume a paused schedule trigger: it is armed again from now, the fires it missed are skipped (resuming a running one changes nothing)', 'resumed'],
  ] as const) {
    const cmd = group
      .command(verb)
      .description(description)
      .argument('<schedule>', 'the schedule id: <factory>/<automation>/<schedule name, or #index>, as `factory automation list --json` shows it')
      .option('--json', 'print JSON')
      .addHelpText('after', `\nSee docs/definitions.md#pausing-a-schedule.\n\nExamples:\n  $ factory automation ${verb} shop/triage/mornings\n  $ factory automation ${verb} shop/nightly/#0 --json\n`);
    addClientOptions(cmd).action(async (id: string, opts: Flags) => {
      if (id.split('/').length < 3) throw new CliError(`a schedule id is <factory>/<automation>/<schedule name, or #index>, got "${id}"; see \`factory automation list --json\`.`, 2);
      const client = clientFromFlags(opts, io);
      const path = `/api/v1/agent/schedules/${encodeURIComponent(id)}`;
      // The API answers the same 200 whether or not anything changed, so the state before tells.
      const before = await scheduleRequest<ScheduleView>(client, 'GET', path, id);
      const s = await scheduleRequest<ScheduleView>(client, 'POST', `${path}/${verb}`, id);
      if (opts.json) {
        io.stdout(JSON.stringify(s, null, 2) + '\n');
        return;
      }
      const unchanged = verb === 'pause' ? before.paused !== null : before.paused === null;
      const state =
        !unchanged ? done
        : verb === 'pause' ? 'is already paused'
        : s.enabled ? 'is already running'
        : 'is not paused (its automation is disabled, so it does not fire)';
      io.stdout(`Schedule ${s.id} ${state}: ${scheduleLabel(s)}.\n`);
    });
  }
}

/** A request about one schedule; an unknown id is said in the CLI's words, pointing at the command that lists them. */
async function scheduleRequest<T>(client: Client, method: 'GET' | 'POST', path: string, id: string): Promise<T> {
  try {
    return await client.request<T>(method, path);
  } catch (err) {
    if (err instanceof FactoryError && err.status === 404) {
      throw new CliError(`no schedule has the id '${id}' (or its factory is not one your key may manage); see the ids with \`factory automation list --json\`.`);
    }
    throw err;
  }
}

/** The text answer of `automation test`. */
export function formatTestFilter(a: TestFilterView): string {
  const lines = [a.would_trigger ? 'Would trigger' : 'Would not trigger'];
  lines.push(`  webhook check: ${a.webhook_check.passed ? 'passed' : 'failed'}: ${a.webhook_check.detail}`);
  if (a.payload_check.passed || a.payload_check.reason === undefined) {
    lines.push(`  payload check: ${a.payload_check.passed ? 'passed' : 'failed'}: ${a.payload_check.detail}`);
  } else {
    lines.push('  payload check: failed', `    key path: ${a.payload_check.path || '(the body itself)'}`, `    reason:   ${a.payload_check.reason}`);
  }
  if (a.note) lines.push(`  note: ${a.note}`);
  return lines.join('\n') + '\n';
}

function webhookLabel(t: AutomationView['triggers'][number]): string {
  const who = t.webhook_name ?? t.webhook_uid ?? '?';
  return t.webhook_state === 'enabled' ? who : `${who} (${t.webhook_state})`;
}

/** `0 9 * * 1-5 (next 2026-03-03 09:00 UTC)`; a disabled automation's schedule is not armed. */
function scheduleLabel(s: ScheduleView): string {
  if (s.paused) return `${s.cron_schedule} (paused)`;
  const next = s.history.next_run ? `next ${s.history.next_run.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC')}` : 'not armed';
  return `${s.cron_schedule} (${next})`;
}

async function listAutomations(client: Client, factory?: string): Promise<AutomationView[]> {
  const q = factory ? `?factory=${encodeURIComponent(factory)}` : '';
  const automations = (await client.request<{ automations: AutomationView[] }>('GET', `/api/v1/automations${q}`)).automations;
  const { schedules } = await client.request<{ schedules: ScheduleView[] }>('GET', '/api/v1/agent/schedules');
  for (const a of automations) {
    const own = schedules.filter((s) => s.factory === a.factory && s.automation === a.name);
    if (own.length) a.schedules = own.map(({ id, name, cron_schedule, enabled, paused, history, factory: f, automation }) => ({ id, name, cron_schedule, enabled, paused, history, factory: f, automation }));
  }
  return automations;
}

/** The factory of the one automation called `name`; several or none is an error that says what to do. */
async function factoryOf(client: Client, name: string): Promise<string> {
  const found = (await listAutomations(client)).filter((a) => a.name === name);
  if (found.length === 0) throw new CliError(`no automation is named '${name}'; see \`factory automation list\`.`);
  if (found.length > 1) throw new CliError(`several factories have an automation named '${name}' (${found.map((a) => a.factory).join(', ')}); add --factory.`, 2);
  return found[0].factory;
}
