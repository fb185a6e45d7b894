import { accessSync, constants, existsSync, statfsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { CliError } from '../../core/errors.ts';
import { fsReason } from '../../core/fs-reason.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { DB, Dialect, Statement } from './db.ts';

/**
 * When the database's storage fails (a full disk, a read-only file system, I/O errors, a damaged
 * file), docs/runtime.md#when-storage-fails: what the error is in words (`storageFailure`), the
 * runtime's state of it (`StorageHealth`: one log line when writes start failing, a repeat at most
 * once a minute, one when a write succeeds again; what `/readyz` says meanwhile), the background
 * integrity check at start, and the start-up sentences.
 */

/** What kind of storage failure an error is. */
export type StorageKind = 'full' | 'readonly' | 'io' | 'corrupt' | 'resources' | 'unreachable';

export interface StorageFailure {
  kind: StorageKind;
  /** The engine's own code: SQLITE_FULL, SQLITE_IOERR_FSYNC, 53100, ENOSPC, ... */
  code: string;
  /** What happened, in words that follow "the runtime could not store this request:". */
  reason: string;
}

const SQLITE_REASONS: [prefix: string, kind: StorageKind, reason: string][] = [
  ['SQLITE_FULL', 'full', "its database's disk is full"],
  ['SQLITE_IOERR', 'io', "its database's disk reported an I/O error"],
  ['SQLITE_READONLY', 'readonly', 'its database is read-only (the file system, or the files, may not be written)'],
  ['SQLITE_CORRUPT', 'corrupt', 'its database file is damaged (corrupt)'],
  ['SQLITE_NOTADB', 'corrupt', 'its database file is damaged (not a database)'],
  ['SQLITE_CANTOPEN', 'io', "its database's files could not be opened"],
];

function unreachable(why: string): [StorageKind, string] {
  return ['unreachable', `its database server cannot be reached (${why})`];
}

/** PostgreSQL's SQLSTATEs (class 53: insufficient resources; 58: system error; XX001/XX002: damaged data). */
const POSTGRES_REASONS: Record<string, [StorageKind, string]> = {
  '53100': ['full', "its database server's disk is full"],
  '53000': ['resources', 'its database server is out of resources'],
  '53200': ['resources', 'its database server is out of memory'],
  '53300': ['resources', 'its database server has too many connections'],
  '53400': ['resources', 'its database server reached a configured limit'],
  '58030': ['io', "its database server's disk reported an I/O error"],
  '25006': ['readonly', 'its database is read-only (a standby, or read-only transactions)'],
  XX001: ['corrupt', "its database's data is damaged (corrupt)"],
  XX002: ['corrupt', "its database's index is damaged (corrupt)"],
  // Class 08 (the connection; others of the class as 08000) and 57P01-03 (the server shutting down
  // or starting): a replica that lost its database has stored nothing, and its next statement
  // connects again.
  '08000': unreachable('the connection failed'),
  '08004': unreachable('the connection was refused'),
  '08006': unreachable('the connection was lost'),
  '57P01': unreachable('it is shutting down'),
  '57P02': unreachable('it crashed'),
  '57P03': unreachable('it is starting'),
};

const CLASS_ENTRY: Record<string, string> = { '08': '08000', '53': '53000', '58': '58030' };

const ERRNO_REASONS: Record<string, [StorageKind, string]> = {
  ENOSPC: ['full', 'its disk is full'],
  EDQUOT: ['full', 'its disk quota is used up'],
  EROFS: ['readonly', 'its file system is read-only'],
  EIO: ['io', 'its disk reported an I/O error'],
};

/**
 * The storage failure `err` is, or undefined for any other error: SQLite's SQLITE_FULL,
 * SQLITE_IOERR*, SQLITE_READONLY*, SQLITE_CORRUPT*, SQLITE_NOTADB and SQLITE_CANTOPEN*;
 * PostgreSQL's 53xxx, 58xxx, 25006, XX001 and XX002, and a lost connection (08xxx, 57P01-03);
 * the system's ENOSPC, EDQUOT, EROFS and EIO.
 */
export function storageFailure(err: unknown): StorageFailure | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (code.startsWith('SQLITE_')) {
    const hit = SQLITE_REASONS.find(([prefix]) => code.startsWith(prefix));
    return hit && { kind: hit[1], code, reason: hit[2] };
  }
  // A code of a class without an entry of its own reads as its class's first entry.
  const pg = POSTGRES_REASONS[code] ?? (/^(?:08|5[38])[0-9A-Z]{3}$/.test(code) ? POSTGRES_REASONS[CLASS_ENTRY[code.slice(0, 2)]] : undefined);
  if (pg) return { kind: pg[0], code, reason: pg[1] };
  const errno = ERRNO_REASONS[code];
  return errno && { kind: errno[0], code, reason: errno[1] };
}

/** How long a client is told to wait before it retries a request refused for a storage failure. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;
/** The least time between two error lines about the same failing storage. */
export const STORAGE_LOG_EVERY_MS = 60_000;
/** While writes fail, `/readyz` tries a write of its own at most this often. */
const PROBE_EVERY_MS = 1000;

interface Episode {
  since: number;
  failure: StorageFailure;
  /** Requests refused since writes started failing. */
  refused: number;
}

/**
 * The runtime's view of its storage (docs/runtime.md#when-storage-fails). Writes are failing from
 * the first request refused for a storage failure until a transaction that wrote commits (any
 * transaction of the store: a delivery, a run, a lease renewal, or `/readyz`'s own probe). A
 * damaged database (SQLITE_CORRUPT, a failed integrity check) stays damaged until a restart.
 */
export class StorageHealth {
  private failing: Episode | undefined;
  /** Why the database is damaged (sticky), for `/readyz`. */
  private damaged: string | undefined;
  /** When the last error line was logged (clock ms); failures are counted in between. */
  private lastLineAt: number | undefined;
  /** Requests refused since the last error line. */
  private unreported = 0;
  /** Whether an error line was logged and no recovery line since: the log says "failing". */
  private told = false;
  private timer: NodeJS.Timeout | undefined;
  private lastProbeAt = -Infinity;
  /** The logger of the last failure: the recovery line goes where the failure lines went. */
  private log: Logger | undefined;
  private probeStmt: Statement | undefined;
  private check: QuickCheck | undefined;

  constructor(
    private readonly db: DB,
    private readonly dialect: Dialect,
    /** The SQLite file or the PostgreSQL URL without its password, for the log lines. */
    private readonly location: string,
    private readonly clock: Clock,
  ) {}

  /** True while writes fail (the last one failed with a storage error and none has succeeded since). */
  get isFailing(): boolean {
    return this.failing !== undefined;
  }

  /**
   * Records `err` if it is a storage failure (else returns undefined and does nothing): starts or
   * continues the failing state and logs as described on the class. `refused`: `err` refused a
   * request (counted in the log lines); false for the probe's own write.
   */
  failed(err: unknown, log: Logger, refused = true): StorageFailure | undefined {
    const failure = storageFailure(err);
    if (!failure) return undefined;
    this.log = log;
    const now = this.clock.now().getTime();
    this.failing ??= { since: now, failure, refused: 0 };
    this.failing.failure = failure;
    if (refused) {
      this.failing.refused++;
      this.unreported++;
    }
    if (failure.kind === 'corrupt') this.damaged ??= `${failure.reason} (${failure.code})`;
    this.report(now);
    return failure;
  }

  /** A write committed: ends the failing state, with one line if the log said it was failing. */
  succeeded(): void {
    const episode = this.failing;
    if (!episode) return;
    this.failing = undefined;
    this.unreported = 0;
    if (!this.told) return;
    this.told = false;
    const seconds = Math.round((this.clock.now().getTime() - episode.since) / 1000);
    this.log?.info({ database: this.location, refused: episode.refused, failedForSeconds: seconds }, 'writes succeed again');
  }

  /** Marks the database damaged (a failed integrity check): `/readyz` answers 503 until a restart. */
  damage(why: string): void {
    this.damaged ??= why;
  }

  /**
   * Why the runtime is not ready, or undefined when it is: the database is damaged, or writes
   * fail. While they fail, first tries a small write of its own (at most once a second), so a
   * runtime that no traffic reaches (a load balancer took it out of rotation) finds out that its
   * storage works again.
   */
  unready(log: Logger): string | undefined {
    if (this.damaged) return `The runtime's database is damaged: ${this.damaged}; restore it from a backup.`;
    if (this.failing) this.probe(log);
    const episode = this.failing;
    if (!episode) return undefined;
    const since = new Date(episode.since).toISOString();
    return `The runtime cannot store writes since ${since}: ${episode.failure.reason} (${episode.failure.code}).`;
  }

  /** The probe: one small write (the time, in `meta`), whose success or failure is recorded as any other. */
  private probe(log: Logger): void {
    const now = this.clock.now().getTime();
    if (now - this.lastProbeAt < PROBE_EVERY_MS && now >= this.lastProbeAt) return;
    this.lastProbeAt = now;
    this.probeStmt ??= this.db.prepare(`INSERT INTO meta (key, value) VALUES ('storage_probe', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
    const stmt = this.probeStmt;
    try {
      this.db.transaction(() => stmt.run(Buffer.from(new Date(now).toISOString())))();
      this.succeeded();
    } catch (err) {
      this.failed(err, log, false);
    }
  }

  /** Logs the first line of a failure, or the count since the last line, at most once a minute. */
  private report(now: number): void {
    const episode = this.failing;
    if (!episode || !this.log) return;
    if (this.told && this.unreported === 0) return;
    if (this.lastLineAt !== undefined && now - this.lastLineAt < STORAGE_LOG_EVERY_MS && now >= this.lastLineAt) {
      // A real timer, so the count is logged even when no request comes after the minute.
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.report(this.clock.now().getTime());
      }, STORAGE_LOG_EVERY_MS - (now - this.lastLineAt)).unref();
      return;
    }
    const { failure } = episode;
    const fields = { database: this.location, code: failure.code, since: new Date(episode.since).toISOString() };
    const reason = stripIts(failure.reason) + (failure.kind === 'corrupt' ? ' (restore it from a backup)' : '');
    if (!this.told) {
      this.log.error({ ...fields, refused: this.unreported }, `writes fail: ${reason}; requests that write are answered 503, and /readyz too, until a write succeeds`);
    } else {
      this.log.error({ ...fields, refused: this.unreported }, `writes still fail: ${reason}; ${this.unreported} more requests refused since the last line`);
    }
    this.lastLineAt = now;
    this.unreported = 0;
    this.told = true;
  }

  /**
   * From now on, tells this state of every transaction of `db` that wrote and committed (the
   * store calls it once, before its modules prepare anything). While writes fail, the outermost
   * transaction function asks the connection, at its end, whether it wrote (SQLite:
   * `total_changes()`; PostgreSQL: whether the transaction has an id), so a read-only transaction
   * that commits ends nothing; while they do not, it costs a counter.
   */
  watchCommits(): void {
    const health = this;
    const db = this.db;
    const original = db.transaction.bind(db);
    let depth = 0;
    let wrote = false;
    /** A nested transaction of the current outermost one failed for a storage failure (and was caught). */
    let tainted = false;
    let changes: Statement | undefined;
    const count = (): number => Number((changes ??= db.prepare('SELECT total_changes() AS n').pluck()).get());
    let assigned: Statement | undefined;
    const hasId = (): boolean =>
      Number((assigned ??= db.prepare('SELECT CASE WHEN txid_current_if_assigned() IS NULL THEN 0 ELSE 1 END AS wrote').pluck()).get()) === 1;
    const sqlite = this.dialect === 'sqlite';
    // The question never changes the transaction's outcome: if it cannot be asked, nothing is ended.
    const asked = <T,>(ask: () => T, otherwise: T): T => {
      try {
        return ask();
      } catch {
        return otherwise;
      }
    };
    const watched = <F extends (...args: any[]) => any>(fn: F) => {
      const inner = function (this: unknown, ...args: unknown[]) {
        depth++;
        if (depth === 1) tainted = false;
        try {
          const watch = depth === 1 && health.failing !== undefined;
          const before = watch && sqlite ? asked(count, NaN) : 0;
          const result = fn.apply(this, args);
          // A savepoint that failed for a storage failure was rolled back, but what it wrote first
          // still gave the transaction its id (PostgreSQL): such a transaction proves nothing.
          if (watch) wrote = !tainted && asked(() => (sqlite ? count() > before : hasId()), false);
          return result;
        } catch (err) {
          if (depth > 1 && storageFailure(err)) tainted = true;
          throw err;
        } finally {
          depth--;
        }
      } as unknown as F;
      const tx = original(inner);
      const outer = (run: (...args: any[]) => any) =>
        function (this: unknown, ...args: unknown[]) {
          wrote = false;
          const result = run.apply(this, args);
          if (wrote && !db.inTransaction) {
            wrote = false;
            health.succeeded();
          }
          return result;
        };
      return Object.assign(outer(tx), { immediate: outer(tx.immediate), deferred: outer(tx.deferred), exclusive: outer(tx.exclusive) }) as typeof tx;
    };
    (db as { transaction: DB['transaction'] }).transaction = watched;
  }

  /**
   * SQLite file only: runs `PRAGMA quick_check` on `path` in a thread of its own (a connection of
   * its own, read-only), so the start is not held up (about half a second per 150 MB). A damaged
   * database is logged once and makes `/readyz` answer 503 (docs/runtime.md#when-storage-fails).
   * Resolves when the check is over (`checked`).
   */
  startQuickCheck(path: string, log: Logger): void {
    this.check = new QuickCheck(path, (result) => {
      if ('problems' in result) {
        if (result.problems.length === 0) {
          log.debug({ database: path, ms: result.ms }, 'the database passed its quick check');
          return;
        }
        this.damage(`PRAGMA quick_check found: ${result.problems[0]}`);
        log.error({ database: path, problems: result.problems }, 'the database is damaged (PRAGMA quick_check failed): /readyz answers 503; restore it from a backup');
        return;
      }
      const failure = storageFailure({ code: result.code });
      if (failure?.kind === 'corrupt') {
        this.damage(`PRAGMA quick_check failed: ${result.error}`);
        log.error({ database: path, code: result.code, reason: result.error }, 'the database is damaged (PRAGMA quick_check failed): /readyz answers 503; restore it from a backup');
      } else {
        log.warn({ database: path, code: result.code, reason: result.error }, 'could not check the database (PRAGMA quick_check)');
      }
    });
  }

  /** Settles once the quick check (if one was started) is over. */
  get checked(): Promise<void> {
    return this.check?.done ?? Promise.resolve();
  }

  /** Stops the quick check and the log timer; waits (at most `waitMs`) for the check's thread to end. */
  async stop(waitMs = 5_000): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.check?.stop(waitMs);
  }
}

type QuickCheckResult = { problems: string[]; ms: number } | { error: string; code?: string };

/** The quick check's thread (runtime/store/quick-check-worker.js). */
class QuickCheck {
  private readonly worker: Worker;
  readonly done: Promise<void>;
  private stopped = false;

  constructor(path: string, onResult: (result: QuickCheckResult) => void) {
    this.worker = new Worker(new URL('./quick-check-worker.js', import.meta.url), { workerData: { path } });
    this.worker.unref();
    this.done = new Promise<void>((resolve) => {
      this.worker.on('message', (m: QuickCheckResult) => {
        if (!this.stopped) onResult(m);
      });
      this.worker.on('error', (err) => {
        if (!this.stopped) onResult({ error: err.message });
      });
      this.worker.on('exit', () => resolve());
    });
  }

  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    void this.worker.terminate();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }
}

/**
 * Why the directory `dir` (or, if it does not exist yet, its nearest existing parent) cannot take
 * writes, in words, from the file system itself: read-only, no space left, or permission denied;
 * undefined when none of these holds.
 */
export function unwritableReason(dir: string): string | undefined {
  let at = resolve(dir);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    accessSync(at, constants.W_OK);
  } catch (err) {
    return fsReason(err);
  }
  try {
    const fs = statfsSync(at);
    // root may use the blocks the file system keeps back for it; anyone else only the available ones.
    const free = process.getuid?.() === 0 ? fs.bfree : fs.bavail;
    if (free === 0) return fsReason({ code: 'ENOSPC' });
  } catch {
    // No statfs here: nothing more to say.
  }
  return undefined;
}

/**
 * The start-up sentence for `err`, a failure to open or write the database or the data dir, when
 * it is a storage failure (or SQLite could not open its files); undefined for any other error.
 * "cannot use DIR as the data dir: the file system is read-only." names the cause the file system
 * reports, which SQLite's own message ("unable to open database file") does not.
 */
export function startupStorageError(err: unknown, dataDir: string, engine: Dialect): CliError | undefined {
  if (err instanceof CliError) return undefined;
  const failure = storageFailure(err);
  if (!failure) return undefined;
  const message = err instanceof Error ? err.message : String(err);
  if (engine === 'postgres') return new CliError(`cannot use the PostgreSQL database: ${stripIts(failure.reason)} (${failure.code}: ${message}).`);
  if (failure.kind === 'corrupt') {
    return new CliError(`the database in ${dataDir} is damaged (${message}); restore factory.db from a backup, or move it away to start with an empty one.`);
  }
  const why = unwritableReason(dataDir) ?? `${stripIts(failure.reason)} (${failure.code})`;
  return new CliError(`cannot use ${dataDir} as the data dir: ${why}.`);
}

/** "its database's disk is full" → "the database's disk is full", for sentences about the database itself. */
const stripIts = (reason: string): string => reason.replace(/^its /, 'the ');
