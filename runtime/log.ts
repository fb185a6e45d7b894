import { pino, type DestinationStream, type Logger } from 'pino';
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

/**
 * The form of a request path that may be logged or echoed (`instance`): the query string is
 * dropped (it may carry anything), and in `/webhooks/w/<uid>/<token>` everything after the UID
 * becomes `[REDACTED]`, since for url_token webhooks that segment is the secret (SPEC 7.2).
 */
export function redactUrl(path: string): string {
  const q = path.search(/[?#]/);
  const bare = q === -1 ? path : path.slice(0, q);
  const m = /^(\/webhooks\/w\/[^/]+)\/.+$/.exec(bare);
  return m ? `${m[1]}/[REDACTED]` : bare;
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * Writes the one access-log line of a request (`request`: method, path, status, ms). Its fields
 * are fixed and carry no secret: the path goes through `redactUrl` (no query string, no URL
 * token), so this line skips pino's redaction, which with the wildcard paths above costs ~50 µs
 * a line, more than the ingress spends on the rest of a delivery. Add no other field here.
 */
export function logRequest(log: Logger, line: { method: string; url: string; status: number; ms: number }): void {
  let access = accessLoggers.get(log);
  if (!access) {
    access = log.child({}, { redact: { paths: [] } });
    accessLoggers.set(log, access);
  }
  access.info({ method: line.method, path: redactUrl(line.url), status: line.status, ms: line.ms }, 'request');
}
