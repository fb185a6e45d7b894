import { pino, type DestinationStream, type Logger } from 'pino';
import { WEBHOOK_UID_PATTERN } from '../core/ids.ts';
import type { LogLevel } from './config.ts';

export type { Logger } from 'pino';

/**
 * Field paths whose values never reach a log line (SPEC 5: secrets and Authorization headers are
 * redacted). pino's redaction matches exact paths with one-level wildcards, so each name is
 * listed at the top level, one level down and under request/response headers.
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
  /** Where lines go; defaults to stdout. Tests pass a stream to capture the lines. */
  destination?: DestinationStream;
}

/** The runtime's structured JSON logger (pino) with secret redaction. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** An absolute-form request target's `scheme://authority` (RFC 9112 3.2.2); user info included. */
const ORIGIN = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/;
const PERCENT = /%[0-9A-Fa-f]{2}/;
const PERCENT_ALL = /%([0-9A-Fa-f]{2})/g;
/** Decoding more layers than this is not something a real client does; the rest stays encoded. */
const MAX_DECODES = 4;

/**
 * The form of a request URL that may be logged or echoed (`instance`): the query string and
 * fragment are dropped (they may carry anything), as is the scheme and authority of an
 * absolute-form target. In an ingress path (`/webhooks/w/<uid>/<token>`) only the UID may show,
 * and only when it has a UID's exact shape; whatever follows becomes `[REDACTED]`, since for
 * url_token webhooks it is the secret (SPEC 7.2).
 *
 * The ingress path is recognised whatever its shape, because a sender's misspelt URL still holds
 * the real token: letter case, repeated slashes, `.` and `..` segments, an empty UID, a prefix,
 * backslashes and percent-encoding (`%2F`, even encoded twice) are all normalised before looking
 * for the `webhooks/w` segments. Such a path is logged in its normal form. Other paths are
 * logged as received.
 */
export function redactUrl(url: string): string {
  const cut = url.search(/[?#]/);
  let bare = cut === -1 ? url : url.slice(0, cut);
  const origin = ORIGIN.exec(bare);
  if (origin) bare = bare.slice(origin[0].length) || '/';
  let norm = bare;
  for (let i = 0; i < MAX_DECODES && PERCENT.test(norm); i++) {
    norm = norm.replace(PERCENT_ALL, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
  const segments = norm.replace(/\\/g, '/').split('/');
  const isSkip = (segment: string) => segment === '' || segment === '.';
  for (let i = 0; i < segments.length; i++) {
    if (segments[i].toLowerCase() !== 'webhooks') continue;
    let j = i + 1;
    while (j < segments.length && isSkip(segments[j])) j++;
    if (segments[j]?.toLowerCase() !== 'w') continue;
    const prefix = segments.slice(0, i).filter((s) => !isSkip(s));
    const head = `/${[...prefix, 'webhooks', 'w'].join('/')}`;
    const rest = segments.slice(j + 1);
    let k = 0;
    while (k < rest.length && isSkip(rest[k])) k++;
    if (k === rest.length) return head;
    if (!WEBHOOK_UID_PATTERN.test(rest[k])) return `${head}/[REDACTED]`;
    return k + 1 < rest.length ? `${head}/${rest[k]}/[REDACTED]` : `${head}/${rest[k]}`;
  }
  return bare;
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * Writes the one access-log line of a request (`request`: method, path, status, ms, and for an
 * ingress request the delivery log's outcome and delivery id). Its fields are fixed and carry no
 * secret: the path goes through `redactUrl` (no query string, no URL token), and a delivery id
 * is a sender's event id or a hash, never a credential. So this line skips pino's redaction,
 * which with the wildcard paths above costs ~50 µs a line, more than the ingress spends on the
 * rest of a delivery. Add no other field here.
 */
export function logRequest(
  log: Logger,
  line: { method: string; url: string; status: number; ms: number; delivery?: { outcome: string; deliveryId: string } },
): void {
  let access = accessLoggers.get(log);
  if (!access) {
    access = log.child({}, { redact: { paths: [] } });
    accessLoggers.set(log, access);
  }
  const d = line.delivery;
  access.info(
    d
      ? { method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms, outcome: d.outcome, delivery_id: d.deliveryId }
      : { method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms },
    'request',
  );
}
