import { pino, type DestinationStream, type Logger } from 'pino';
import { KEY_ID_PATTERN, RESOURCE_NAME_PATTERN, RUN_ID_PATTERN, WEBHOOK_UID_PATTERN } from '../core/ids.ts';
import { iso } from './clock.ts';
import type { LogLevel } from './config.ts';

export type { Logger } from 'pino';

/**
 * Field paths whose values never reach a log line (docs/runtime.md: secrets and Authorization
 * headers are redacted). pino's redaction matches exact paths with one-level wildcards, so each
 * name is listed at the top level, one level down and under request/response headers.
 */
const SENSITIVE = ['secret', 'value', 'token', 'key', 'password', 'authorization', 'cookie', 'set-cookie'];
const REDACT_PATHS = [
  ...SENSITIVE,
  ...SENSITIVE.map((f) => `*.${f}`),
  ...SENSITIVE.map((f) => `*.headers.${f}`),
  ...SENSITIVE.map((f) => `*.*.headers.${f}`),
];

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; defaults to stdout (`turnDestination(1)`). Tests pass a stream to capture the lines. */
  destination?: DestinationStream;
}

/** Destinations holding lines not yet written, flushed by the one exit handler below. */
const unwritten = new Set<() => void>();
let exitHandler = false;

/**
 * Writes every line the turn destinations hold now. For a command that prints its own lines on
 * the same stdout (`factory serve`'s "listening on"), so they come after the log lines before them.
 */
export function flushLogs(): void {
  for (const f of [...unwritten]) f();
}

/**
 * The runtime's log destination (docs/runtime.md#health): the lines of one event-loop turn are
 * written together, with one write at the end of the turn (setImmediate), instead of one write
 * per line. Under load the ingress answers dozens of requests per turn, each with an access line,
 * and a write system call apiece cost more than the line itself. A line is never held past the
 * turn that logged it, and the process's exit handler writes what is pending (an uncaught
 * exception or `process.exit` included); only a SIGKILL in the middle of a turn can lose that
 * turn's lines. Writing goes through pino's own destination (sonic-boom, synchronous), which
 * retries partial writes and a busy pipe.
 */
export function turnDestination(dest: number | string = 1): DestinationStream {
  const out = pino.destination({ dest, sync: true });
  let pending = '';
  const flush = (): void => {
    unwritten.delete(flush);
    if (pending === '') return;
    const text = pending;
    pending = '';
    out.write(text);
  };
  if (!exitHandler) {
    exitHandler = true;
    process.on('exit', flushLogs);
  }
  return {
    write(line: string) {
      if (pending === '') {
        unwritten.add(flush);
        setImmediate(flush);
      }
      pending += line;
    },
  };
}

/** The runtime's structured JSON logger (pino) with secret redaction. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? turnDestination(1);
  const log = pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
  ownLoggers.set(log, destination);
  return log;
}

/**
 * Root loggers made by `createLogger`, with their destination: they have no bindings, no custom
 * levels and no formatters, so `logRequest` can write their access lines itself (see there).
 */
const ownLoggers = new WeakMap<Logger, DestinationStream>();

/** An absolute-form request target's `scheme://authority` (RFC 9112 3.2.2); user info included. */
const ORIGIN = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/;
const REDACTED = '[REDACTED]';

/**
 * The shortest url_token there can be (a bound secret has at least 32 URL-safe characters; a
 * generated one 43). A name this long is never logged: a token could be sitting in its place.
 */
const MIN_TOKEN_LENGTH = 32;
const short = (re: RegExp) => (s: string) => s.length < MIN_TOKEN_LENGTH && re.test(s);

/** Path parameters that may be logged, by the name LOGGED_ROUTES gives them; any other parameter never is. */
const PARAMS: Readonly<Record<string, (segment: string) => boolean>> = {
  uid: (s) => WEBHOOK_UID_PATTERN.test(s),
  run: (s) => RUN_ID_PATTERN.test(s),
  key: (s) => KEY_ID_PATTERN.test(s),
  factory: short(RESOURCE_NAME_PATTERN),
  name: short(RESOURCE_NAME_PATTERN),
  secret: short(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/),
  file: (s) => /^[a-z0-9-]{1,24}\.(?:js|css)$/.test(s),
};

/**
 * Every route of the runtime as it may be logged. `:uid`, `:run`, `:key`, `:factory`, `:name`,
 * `:secret` and `:file` are logged when the segment has that parameter's exact shape (names only
 * when shorter than MIN_TOKEN_LENGTH); `:rest` (a delivery id, a url_token) never is. A test
 * (test/runtime/log-redact.test.ts) fails when a route of the router is missing here.
 */
export const LOGGED_ROUTES: readonly string[] = [
  '/',
  '/healthz',
  '/readyz',
  '/dashboard/:file',
  '/sessions/:run',
  '/webhooks/w',
  '/webhooks/w/:uid',
  '/webhooks/w/:uid/:rest',
  '/api/v1/keys',
  '/api/v1/keys/:key/revoke',
  '/api/v1/secrets',
  '/api/v1/secrets/:secret',
  '/api/v1/secrets/:secret/factories',
  '/api/v1/secrets/:secret/grant',
  '/api/v1/secrets/:secret/revoke',
  '/api/v1/factories/:factory/plan',
  '/api/v1/factories/:factory/apply',
  '/api/v1/factories/:factory/webhooks',
  '/api/v1/webhooks',
  '/api/v1/webhooks/:uid',
  '/api/v1/webhooks/:uid/enable',
  '/api/v1/webhooks/:uid/disable',
  '/api/v1/webhooks/:uid/rotate',
  '/api/v1/webhooks/:uid/secret',
  '/api/v1/webhooks/:uid/deliveries',
  '/api/v1/webhooks/:uid/deliveries/:rest',
  '/api/v1/webhooks/:uid/deliveries/:rest/replay',
  '/api/v1/automations',
  '/api/v1/automations/:factory/:name',
  '/api/v1/automations/:factory/:name/test',
  '/api/v1/agent/run',
  '/api/v1/agent/runs',
  '/api/v1/agent/runs/:run',
  '/api/v1/agent/runs/:run/cancel',
  '/api/v1/agent/runs/:run/retry',
  '/api/v1/agent/runs/:run/transcript',
  '/api/v1/agent/schedules',
  '/api/v1/agent/schedules/:id',
  '/api/v1/agent/schedules/:id/pause',
  '/api/v1/agent/schedules/:id/resume',
  '/api/v1/worker/claim',
  '/api/v1/worker/runs/:run/heartbeat',
  '/api/v1/worker/runs/:run/events',
  '/api/v1/worker/runs/:run/finish',
  '/api/v1/openapi.json',
];

const TEMPLATES = LOGGED_ROUTES.map((r) => r.split('/').filter(Boolean));
/** The fixed words of the routes: short constants, so never a token. */
const WORDS = new Set(TEMPLATES.flat().filter((w) => !w.startsWith(':')));
/** The hot path's shape: a well-formed ingress URL, with or without a token segment. */
const INGRESS = /^\/webhooks\/w\/(wh_[a-z2-7]{26})(?:\/([^/?#]*))?(?:[?#]|$)/;

/**
 * The form of a request target that may be logged or echoed (`instance`, error logs, the access
 * line, and through it the `dev` feed). It never parses its way around a mangled URL; it keeps
 * only what it recognises as safe and redacts the rest, so a url_token (docs/ingress.md) cannot
 * reach a log line whatever the target looks like:
 *
 * 1. The query string and fragment go, as does an absolute-form target's scheme, authority and
 *    user info. The path is split on `/` and each segment percent-decoded once, as the router does.
 *    Empty and `.` segments are dropped.
 * 2. A path that is one of LOGGED_ROUTES (words in any letter case) is logged in that route's
 *    form, each parameter as it is when it has its exact shape, else `[REDACTED]`.
 * 3. Any other path keeps its leading segments while they are words of those routes or generated
 *    ids (`wh_`, `run_`, `key_`). The first other segment, and everything after it, becomes one
 *    `[REDACTED]`; so does everything after a webhook UID, wherever the UID is
 *    (`/w/<uid>/<token>` → `/w/<uid>/[REDACTED]`, `/webhooks/w;/<uid>/<token>` → `/webhooks/[REDACTED]`).
 *
 * So a logged path only ever holds route words, generated ids, names shorter than any token, and
 * `[REDACTED]`.
 */
export function redactUrl(url: string): string {
  const fast = INGRESS.exec(url);
  if (fast) return fast[2] ? `/webhooks/w/${fast[1]}/${REDACTED}` : `/webhooks/w/${fast[1]}`;
  const cut = url.search(/[?#]/);
  let bare = cut === -1 ? url : url.slice(0, cut);
  const origin = ORIGIN.exec(bare);
  if (origin) bare = bare.slice(origin[0].length);
  const segments = bare
    .split('/')
    .map(decodeSegment)
    .filter((s) => s !== '' && s !== '.');
  const kept = asRoute(segments) ?? knownPrefix(segments);
  // One marker for a run of redacted segments: how many there were is nobody's business.
  return '/' + kept.filter((s, i) => s !== REDACTED || kept[i - 1] !== REDACTED).join('/');
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // Not valid percent-encoding: kept as sent, it cannot match a word or an id, so it is redacted.
    return segment;
  }
}

/** The segments as the one route of LOGGED_ROUTES they match, or undefined. */
function asRoute(segments: string[]): string[] | undefined {
  for (const template of TEMPLATES) {
    if (template.length !== segments.length) continue;
    const out: string[] = [];
    for (let i = 0; i < template.length; i++) {
      const t = template[i];
      const s = segments[i];
      if (!t.startsWith(':')) {
        if (s.toLowerCase() !== t) break;
        out.push(t);
      } else out.push(PARAMS[t.slice(1)]?.(s) ? s : REDACTED);
    }
    if (out.length === template.length) return out;
  }
  return undefined;
}

const GENERATED_ID = /^(?:wh|run|key)_[a-z2-7]{26}$/;

/** A path that is no route: its leading route words and ids, then `[REDACTED]` (see redactUrl). */
function knownPrefix(segments: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    const word = s.toLowerCase();
    if (WORDS.has(word)) out.push(word);
    else if (GENERATED_ID.test(s)) {
      out.push(s);
      if (WEBHOOK_UID_PATTERN.test(s) && i + 1 < segments.length) return [...out, REDACTED];
    } else return [...out, REDACTED];
  }
  return out;
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * Writes the one access-log line of a request (`request`: method, path, status, ms, and for an
 * ingress request the delivery log's outcome, delivery id and a rejection's reason). Its fields
 * are fixed and carry no secret: the path goes through `redactUrl` (no query string, no URL
 * token), a delivery id is a sender's event id or a hash, never a credential, and a reason is one
 * of the pipeline's fixed words (`bad_credentials`, `signature_mismatch`, ...). So this line skips pino's redaction,
 * which with the wildcard paths above costs ~50 µs a line, more than the ingress spends on the
 * rest of a delivery. Add no other field here.
 */
export function logRequest(
  log: Logger,
  line: { method: string; url: string; status: number; ms: number; delivery?: { outcome: string; deliveryId: string; reason?: string | null } },
): void {
  const own = ownLoggers.get(log);
  if (own) {
    // The same bytes as pino's line below, built directly: going through pino costs about 3 µs
    // a line, as much as the rest of the access logging, and the ingress logs every delivery.
    // test/runtime/log.test.ts compares the two.
    if (!log.isLevelEnabled('info')) return;
    const d = line.delivery;
    let text = `{"level":30${isoTimeField()},"method":${JSON.stringify(line.method)},"path":${JSON.stringify(redactUrl(line.url))},"status":${num(line.status)},"ms":${num(line.ms)}`;
    if (d) {
      text += `,"outcome":${JSON.stringify(d.outcome)},"delivery_id":${JSON.stringify(d.deliveryId)}`;
      if (d.reason) text += `,"reason":${JSON.stringify(d.reason)}`;
    }
    own.write(text + ',"msg":"request"}\n');
    return;
  }
  let access = accessLoggers.get(log);
  if (!access) {
    access = log.child({}, { redact: { paths: [] } });
    accessLoggers.set(log, access);
  }
  const d = line.delivery;
  access.info(
    d
      ? d.reason
        ? { method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms, outcome: d.outcome, delivery_id: d.deliveryId, reason: d.reason }
        : { method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms, outcome: d.outcome, delivery_id: d.deliveryId }
      : { method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms },
    'request',
  );
}

/**
 * Milliseconds since `start` (a `performance.now()`), to the microsecond: the `ms` of the access
 * line, the same for the Koa path (app.ts) and the ingress's raw adapter.
 */
export function msSince(start: number): number {
  return Math.round((performance.now() - start) * 1000) / 1000;
}

/** A number as pino writes it: itself when finite, else null. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** pino's `isoTime` field; `iso` keeps the last millisecond's text, which many access lines share under load. */
function isoTimeField(): string {
  return `,"time":"${iso(new Date())}"`;
}
