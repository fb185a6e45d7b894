import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Logger } from '../log.ts';

/**
 * The connection cap (docs/runtime.md#connections): past `max` connections held at once, the HTTP
 * server closes each new one as it arrives, before it reads a byte. Without a cap, a sender that
 * opens connections and holds them exhausts the process's file descriptors, and then the runtime
 * can no longer open its database's files, start a run's processes or send a notification; libuv
 * closes the connections it cannot accept without a word.
 */

/** The default cap when none is configured: half of the open-file limit, at most this many. */
export const DEFAULT_MAX_CONNECTIONS = 10_000;
/** A connection limit reached again within this long after a log line adds to its count instead. */
export const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * The cap for this process: the configured one, else half of its soft open-file limit (Node
 * raises that to the hard limit at start; the other half stays for the database, runs and
 * notifications), at most DEFAULT_MAX_CONNECTIONS. `limitsText` is /proc/self/limits (Linux);
 * without it, the default.
 */
export function connectionCap(configured: number | undefined, limitsText: string | undefined = readLimits()): number {
  if (configured !== undefined) return configured;
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(limitsText ?? '');
  const soft = m && m[1] !== 'unlimited' ? Number(m[1]) : Infinity;
  return Math.max(8, Math.min(DEFAULT_MAX_CONNECTIONS, Math.floor(soft / 2)));
}

function readLimits(): string | undefined {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return undefined;
  }
}

/** How long a request's headers, and the whole request, may take to arrive, on every listener (docs/errors.md). */
export const HEADERS_TIMEOUT_MS = 20_000;
export const REQUEST_TIMEOUT_MS = 60_000;

/** The cap and what it did, for the metrics (`services.connections`, docs/runtime.md#metrics). */
export interface ConnectionStats {
  readonly max: number;
  /** Connections closed as they arrived since start. */
  refused: number;
}

declare module '../services.ts' {
  interface Services {
    connections?: ConnectionStats;
  }
}

/**
 * Sets the cap on `server` and says so in the log when it closes connections: one warning when it
 * first does, then at most one a minute with the number closed since the last.
 */
export function capConnections(
  server: Server,
  max: number,
  log: Logger,
  { now = Date.now, listener = 'the API port', flag = '--max-connections' }: { now?: () => number; listener?: string; flag?: string | null } = {},
): ConnectionStats {
  server.maxConnections = max;
  const stats: ConnectionStats = { max, refused: 0 };
  let lastLog = -Infinity;
  /** `stats.refused` when the last line was written: the next line counts from there. */
  let logged = 0;
  server.on('drop', () => {
    stats.refused++;
    const t = now();
    if (t - lastLog < DROP_LOG_INTERVAL_MS) return;
    log.warn({ listener, maxConnections: max, closed: stats.refused - logged }, `the connection limit of ${listener} (${max}) is reached: new connections are closed until some end${flag ? ` (${flag})` : ''}`);
    lastLog = t;
    logged = stats.refused;
  });
  return stats;
}
