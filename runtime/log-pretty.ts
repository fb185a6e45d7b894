import type { DestinationStream } from 'pino';
import { OUTCOME_LABELS, type DeliveryOutcome } from './store/deliveries.ts';

/**
 * A pino destination that turns the runtime's JSON log lines into one short line each, for a
 * person watching `factory dev` in a terminal: deliveries as they arrive (with their outcome),
 * runs as they start and end, changes made through the API, warnings and errors. Read-only
 * requests that succeed (the dashboard polling, `factory webhook list`) are left out. `serve`
 * keeps the JSON lines, for machines.
 *
 * It only reads fields the logger has already redacted, and the access line's path is already
 * free of URL tokens (log.ts `redactUrl`).
 */
export function prettyDestination(write: (text: string) => void): DestinationStream {
  return {
    write(line: string) {
      const text = prettyLine(line);
      if (text !== undefined) write(text + '\n');
    },
  };
}

/** Messages `factory dev` prints in its own words already. */
const SAID_BY_DEV = new Set(['factory runtime listening', 'created the admin API key; it is in this file']);

/** One JSON log line as a human line, or undefined to leave it out. */
export function prettyLine(line: string): string | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.trimEnd();
  }
  const msg = str(o.msg);
  if (SAID_BY_DEV.has(msg)) return undefined;
  const time = typeof o.time === 'string' ? o.time.slice(11, 19) : '';
  const level = typeof o.level === 'number' ? o.level : 30;
  let text: string | undefined;
  if (msg === 'request') text = request(o);
  else if (msg === 'run started') text = `run ${str(o.runId)} started (${str(o.creator)}, environment ${str(o.environment)})`;
  else if (msg === 'run finished') text = `run ${str(o.runId)} ${str(o.state)}${o.statusMessage ? `: ${str(o.statusMessage)}` : ''}`;
  else {
    const err = o.err as { message?: unknown } | undefined;
    const tag = level >= 50 ? 'error: ' : level >= 40 ? 'warning: ' : '';
    text = `${tag}${msg}${err && typeof err.message === 'string' ? `: ${str(err.message)}` : ''}`;
  }
  return text === undefined ? undefined : `${time}  ${text}`;
}

const READ_ONLY_POST = /^\/api\/v1\/(factories\/[^/]+\/plan|automations\/[^/]+\/[^/]+\/test)$/;

function request(o: Record<string, unknown>): string | undefined {
  const status = typeof o.status === 'number' ? o.status : 0;
  const where = `${str(o.method)} ${str(o.path)}`;
  const ms = typeof o.ms === 'number' ? ` (${Math.round(o.ms)} ms)` : '';
  if (typeof o.outcome === 'string') {
    const label = OUTCOME_LABELS[o.outcome as DeliveryOutcome] ?? o.outcome;
    // A rejection says why (as `delivery show` does), so a wrong secret is found from the feed.
    const why = typeof o.reason === 'string' && o.reason ? `: ${str(o.reason)}` : '';
    return `delivery ${str(o.delivery_id)} to ${str(o.path)}: ${status} ${label}${why}${ms}`;
  }
  // A plan and an automation's Test filter are POSTs that change nothing: not shown as changes.
  const readOnly = o.method === 'GET' || o.method === 'HEAD' || (o.method === 'POST' && READ_ONLY_POST.test(String(o.path)));
  if (readOnly && status < 400) return undefined;
  return `${where} → ${status}${ms}`;
}

/** A field as text, with control characters escaped so one log line stays one terminal line. */
function str(v: unknown): string {
  const s = typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
  // C1 controls too (U+0080-U+009F): some terminals take U+009B as CSI and U+009D as OSC.
  // eslint-disable-next-line no-control-regex
  if (!/[\u0000-\u001f\u007f-\u009f]/.test(s)) return s;
  return JSON.stringify(s)
    .slice(1, -1)
    .replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
