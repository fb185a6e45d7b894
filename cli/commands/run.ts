import type { Command } from 'commander';
import { exitWith, usageError } from '../../core/errors.ts';
import { RUN_STATES } from '../../core/run-state.ts';
import { addClientOptions, clientFromFlags, collect, nonEmpty, type Client, type ClientFlags } from '../client.ts';
import type { CliIO } from '../io.ts';
import { formatTable } from '../table.ts';
import { visible } from '../terminal.ts';

interface Run {
  run_id: string;
  state: string;
  title: string;
  config: { environment_id: string };
  source: string;
  creator: { type: string; name: string };
  created_at: string;
  status_message: string | null;
  session_link: string | null;
  retry_of?: string;
  replay_of?: { webhook_uid: string; delivery_id: string; by: { type: string; name: string }; at: string };
  webhook?: { url: string; secret_name?: string };
  notifications?: RunNotification[];
}

/** A notification of a state change and its attempts (docs/api.md#run-notifications). */
interface RunNotification {
  message_id: string;
  state: string;
  status: string;
  attempts: { attempt: number; at: string; status_code: number | null; error: string | null }[];
  next_attempt_at: string | null;
}

/** One line per notification: the state it reports, where it stands, and its attempts. */
function notificationLines(list: RunNotification[]): string {
  return visible(notificationText(list));
}

function notificationText(list: RunNotification[]): string {
  return list
    .map((n) => {
      const tries = n.attempts.map((a) => `${a.at} ${a.status_code ?? a.error ?? 'no answer'}`).join('; ');
      const next = n.next_attempt_at ? `, next attempt ${n.next_attempt_at}` : '';
      return `  ${n.state.padEnd(11)}${n.status}${next}${tries ? ` (${n.attempts.length} attempt${n.attempts.length === 1 ? '' : 's'}: ${tries})` : ''}\n`;
    })
    .join('');
}

export interface TranscriptEvent {
  seq: number;
  time: string;
  type: string;
  data: Record<string, unknown>;
}

interface TranscriptPage {
  state: string;
  finished: boolean;
  events: TranscriptEvent[];
  next_after: number;
  has_more: boolean;
}

const RUNS = '/api/v1/agent/runs';
const FINAL = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pollMs(v: string | undefined): number {
  const n = Number(v ?? '1000');
  if (!Number.isInteger(n) || n < 10 || n > 60_000) throw usageError(`--poll-interval must be milliseconds from 10 to 60000, got "${v}".`);
  return n;
}

/** An argv as it would be typed in a shell: a word with spaces or quotes is single-quoted. */
function shellQuote(argv: unknown[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(String(a)) ? String(a) : `'${String(a).replaceAll("'", `'\\''`)}'`)).join(' ');
}

/** One readable line (or block) per transcript event. */
export function formatEvent(e: TranscriptEvent): string {
  return visible(eventText(e));
}

function eventText(e: TranscriptEvent): string {
  const d = e.data;
  switch (e.type) {
    case 'command': {
      // An argv (the agent, git) is shown quoted: `sh -c 'echo hi'`, not `sh -c echo hi`.
      const text = Array.isArray(d.argv) ? shellQuote(d.argv) : String(d.text);
      const status = d.exit_code === null ? `signal ${String(d.signal ?? '?')}` : `exit ${String(d.exit_code)}`;
      const out = typeof d.output === 'string' && d.output ? d.output.replace(/\n$/, '').replace(/^/gm, '  ') + '\n' : '';
      // The agent's output streams as `output` events while it runs; its `command` event comes at
      // the end, with the exit code, so it reads as a closing line rather than a header.
      if (d.phase === 'agent') return `$ ${text}  (agent ended: ${status}, ${String(d.duration_ms)} ms; its output is above)\n${out}`;
      return `$ ${text}  (${d.phase}, ${status}, ${String(d.duration_ms)} ms)\n${out}`;
    }
    case 'output':
      return String(d.text ?? '');
    case 'message':
      return `[${String(d.kind)}${d.tool ? ' ' + String(d.tool) : ''}] ${String(d.text ?? d.input ?? '')}\n`;
    case 'file_change':
      return d.path ? `${String(d.kind)} ${d.repo ? String(d.repo) + '/' : ''}${String(d.path)}\n` : `${String(d.message ?? '')}\n`;
    case 'state':
      return `-- ${String(d.to)}${d.status_message ? ': ' + String(d.status_message) : ''}\n`;
    default:
      return `${e.type} ${JSON.stringify(d)}\n`;
  }
}

async function waitForEnd(client: Client, runId: string, every: number): Promise<Run> {
  for (;;) {
    const run = await client.request<Run>('GET', `${RUNS}/${encodeURIComponent(runId)}`);
    if (FINAL.includes(run.state)) return run;
    await sleep(every);
  }
}

function summary(run: Run): string {
  return visible(`${run.run_id} ${run.state}${run.status_message ? `: ${run.status_message}` : ''}${run.session_link ? `\nsession: ${run.session_link}` : ''}\n`);
}

/** `factory run create|get|list|cancel|transcript` (docs/api.md, README.md#commands): the agent run API. */
export function registerRun(program: Command, io: CliIO): void {
  const run = program.command('run').description('create and follow agent runs (runs scope)')
    .addHelpText('after', '\nExamples:\n  $ factory run create --prompt "Fix the flaky test" --environment sandbox --wait\n  $ factory run list --state FAILED\n  $ factory run transcript run_abcdefghijklmnopqrstuvwxyz --follow\n');

  addClientOptions(
    run
      .command('create')
      .description('create a run; prints its id (with --wait: waits and exits 0 only when it SUCCEEDED)')
      .requiredOption('--prompt <text>', 'what the agent should do')
      .requiredOption('--environment <id>', 'the environment to run in')
      .option('--title <title>', 'a short title')
      .option('--idempotency-key <key>', 'retry-safe create: the same key and body return the same run')
      .option('--wait', 'wait for the run to finish; print its state and session link')
      .option('--poll-interval <ms>', 'how often --wait asks, in milliseconds', '1000')
      .option('--json', 'print the run as JSON'),
  )
    .addHelpText('after', '\nExamples:\n  $ factory run create --prompt "Fix the flaky test" --environment sandbox\n  $ factory run create --prompt "Update deps" --environment sandbox --wait\n')
    .action(async (flags: ClientFlags & { prompt: string; environment: string; title?: string; idempotencyKey?: string; wait?: boolean; pollInterval?: string; json?: boolean }) => {
      const every = pollMs(flags.pollInterval);
      // An unset shell variable gives an empty key: refused, not sent as no key (a retry would then create twice).
      if (flags.idempotencyKey === '') throw usageError('--idempotency-key is empty; pass a key (an unset shell variable gives an empty one), or leave the option out.');
      const client = clientFromFlags(flags, io);
      const body = { prompt: flags.prompt, config: { environment_id: flags.environment }, ...(flags.title ? { title: flags.title } : {}) };
      let created = await client.request<Run>('POST', RUNS, body, flags.idempotencyKey ? { 'Idempotency-Key': flags.idempotencyKey } : {});
      if (!flags.wait) {
        io.stdout(flags.json ? JSON.stringify(created, null, 2) + '\n' : `${created.run_id}\n`);
        return;
      }
      io.stderr(`created ${created.run_id}; waiting for it to finish\n`);
      created = await waitForEnd(client, created.run_id, every);
      io.stdout(flags.json ? JSON.stringify(created, null, 2) + '\n' : summary(created));
      if (created.state !== 'SUCCEEDED') throw exitWith(1);
    });

  addClientOptions(run.command('get').description('show a run').argument('<run_id>', 'the run id (run_…)', nonEmpty('run id')).option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory run get run_abcdefghijklmnopqrstuvwxyz\n')
    .action(async (id: string, flags: ClientFlags & { json?: boolean }) => {
      const r = await clientFromFlags(flags, io).request<Run>('GET', `${RUNS}/${encodeURIComponent(id)}`);
      if (flags.json) return void io.stdout(JSON.stringify(r, null, 2) + '\n');
      io.stdout(
        formatTable([
          ['run', r.run_id],
          ['state', r.state],
          ['title', r.title],
          ['environment', r.config.environment_id],
          ['creator', `${r.creator.type} ${r.creator.name}`],
          ['created', r.created_at],
          ['status', r.status_message ?? ''],
          ['session', r.session_link ?? ''],
          ...(r.retry_of ? [['retry of', r.retry_of]] : []),
          ...(r.replay_of ? [['replay of', `delivery ${r.replay_of.delivery_id} of ${r.replay_of.webhook_uid}, by ${r.replay_of.by.type} ${r.replay_of.by.name}`]] : []),
          ...(r.webhook ? [['notifies', r.webhook.url]] : []),
        ]),
      );
      if (r.notifications?.length) io.stdout(`notifications:\n${notificationLines(r.notifications)}`);
    });

  addClientOptions(
    run
      .command('list')
      .description('list runs, newest first')
      .option('--state <state>', 'only runs in this state; repeat for several', collect, [])
      .option('--environment <id>', 'only runs of this environment')
      .option('--limit <n>', 'how many (1-100)', '20')
      .option('--cursor <cursor>', 'continue after a previous page (next_cursor)')
      .option('--json', 'print {runs, page_info} as JSON')
      .option('-q, --quiet', 'print only the run ids, one a line (for $(...) in scripts)'),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  $ factory run list\n  $ factory run list --state FAILED --state ERROR --limit 50\n  $ factory run transcript $(factory run list --limit 1 --quiet) --follow     # the newest run\n',
    )
    .action(async (flags: ClientFlags & { state: string[]; environment?: string; limit: string; cursor?: string; json?: boolean; quiet?: boolean }) => {
      if (flags.json && flags.quiet) throw usageError('--json and --quiet print different things; choose one.');
      // Checked here, as delivery list checks its own: a usage error (exit 2), before any request.
      if (!/^\d+$/.test(flags.limit) || Number(flags.limit) < 1 || Number(flags.limit) > 100) throw usageError(`--limit must be an integer from 1 to 100, got "${flags.limit}".`);
      const states = flags.state.map((st) => st.toUpperCase());
      const unknown = states.find((st) => !(RUN_STATES as readonly string[]).includes(st));
      if (unknown !== undefined) throw usageError(`--state must be one of ${RUN_STATES.join(', ')}, got "${unknown}".`);
      const q = new URLSearchParams({ limit: flags.limit });
      for (const st of states) q.append('state', st);
      if (flags.environment) q.set('environment_id', flags.environment);
      if (flags.cursor) q.set('cursor', flags.cursor);
      const page = await clientFromFlags(flags, io).request<{ runs: Run[]; page_info: { has_next_page: boolean; next_cursor: string | null } }>('GET', `${RUNS}?${q}`);
      if (flags.json) return void io.stdout(JSON.stringify(page, null, 2) + '\n');
      if (flags.quiet) return void io.stdout(page.runs.map((r) => r.run_id + '\n').join(''));
      const rows = page.runs.map((r) => [r.run_id, r.state, r.config.environment_id, r.source, r.created_at, r.title]);
      io.stdout(formatTable([['RUN', 'STATE', 'ENVIRONMENT', 'SOURCE', 'CREATED', 'TITLE'], ...rows]));
      if (page.page_info.has_next_page) io.stderr(`more: --cursor ${page.page_info.next_cursor}\n`);
    });

  addClientOptions(run.command('cancel').description('cancel a QUEUED or INPROGRESS run').argument('<run_id>', 'the run id (run_…)', nonEmpty('run id')).option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory run cancel run_abcdefghijklmnopqrstuvwxyz\n')
    .action(async (id: string, flags: ClientFlags & { json?: boolean }) => {
      const r = await clientFromFlags(flags, io).request<{ run_id: string }>('POST', `${RUNS}/${encodeURIComponent(id)}/cancel`);
      io.stdout(flags.json ? JSON.stringify(r) + '\n' : `cancelling ${r.run_id}\n`);
    });

  addClientOptions(run.command('retry').description('start a FAILED or ERROR run again with the same input, as a new run').argument('<run_id>', 'the run id (run_…)', nonEmpty('run id')).option('--json', 'print JSON'))
    .addHelpText('after', '\nExample:\n  $ factory run retry run_abcdefghijklmnopqrstuvwxyz\n')
    .action(async (id: string, flags: ClientFlags & { json?: boolean }) => {
      const r = await clientFromFlags(flags, io).request<Run>('POST', `${RUNS}/${encodeURIComponent(id)}/retry`);
      io.stdout(flags.json ? JSON.stringify(r, null, 2) + '\n' : `${r.run_id}\n`);
    });

  addClientOptions(
    run
      .command('transcript')
      .description("print a run's transcript")
      .argument('<run_id>', 'the run id (run_…)', nonEmpty('run id'))
      .option('--follow', 'keep printing new events until the run finishes')
      .option('--after <seq>', 'start after this event', '0')
      .option('--poll-interval <ms>', 'how often --follow asks, in milliseconds', '1000')
      .option('--json', 'print one JSON event per line'),
  )
    .addHelpText('after', '\nExamples:\n  $ factory run transcript run_abcdefghijklmnopqrstuvwxyz\n  $ factory run transcript run_abcdefghijklmnopqrstuvwxyz --follow\n')
    .action(async (id: string, flags: ClientFlags & { follow?: boolean; after: string; pollInterval?: string; json?: boolean }) => {
      const every = pollMs(flags.pollInterval);
      if (!/^\d+$/.test(flags.after)) throw usageError(`--after must be a non-negative integer, got "${flags.after}".`);
      const client = clientFromFlags(flags, io);
      let after = Number(flags.after);
      for (;;) {
        const page = await client.request<TranscriptPage>('GET', `${RUNS}/${encodeURIComponent(id)}/transcript?after=${after}`);
        for (const e of page.events) io.stdout(flags.json ? JSON.stringify(e) + '\n' : formatEvent(e));
        after = page.next_after;
        if (page.has_more) continue;
        if (!flags.follow || page.finished) return;
        await sleep(every);
        // A reader that went away (`| head`) ends the following, as it ends any output (README.md#commands).
        if (io.stdoutClosed?.()) return;
      }
    });
}
