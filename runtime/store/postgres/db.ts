import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { CliError, FactoryError } from '../../../core/errors.ts';
import type { DB, RunResult, Statement, Transaction } from '../db.ts';

/**
 * PostgreSQL behind the store's synchronous database interface (docs/runtime.md#postgresql).
 *
 * The store is synchronous (better-sqlite3's model: a transaction is a plain function call), so
 * queries go through a blocking bridge: a worker thread (bridge-worker.js) holds the `pg`
 * connections; this thread posts each request and waits on a shared flag with Atomics.wait until
 * the worker has answered. Notifications (LISTEN) come back on a second port, asynchronously.
 */

/** How long one request may take before the store gives up on it (the connection may be gone). */
const REQUEST_TIMEOUT_MS = 30_000;
/** SQLSTATE character_not_in_repertoire: what PostgreSQL answers a text value holding U+0000. */
const NUL_IN_TEXT = '22021';
/** No limit worth the name: a day, as Atomics.wait takes a finite wait. */
const UNLIMITED_MS = 86_400_000;

/** A PostgreSQL error as the store sees it: `code` is the SQLSTATE (23505: unique violation, ...). */
export class PostgresError extends Error {
  readonly code: string | undefined;
  readonly constraint: string | undefined;
  constructor(message: string, code?: string, constraint?: string) {
    super(message);
    this.name = 'PostgresError';
    this.code = code;
    this.constraint = constraint;
  }
}

interface Reply {
  id: number;
  ok: boolean;
  rows?: Record<string, unknown>[];
  rowCount?: number;
  fields?: string[];
  /** The server's transaction status after the request: I idle, T in a transaction, E failed one. */
  tx?: 'I' | 'T' | 'E';
  error?: { message: string; code?: string; constraint?: string };
}

/** The URL with its password replaced, for logs and messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    // The driver also takes credentials from the query (?password=, ?sslpassword=).
    for (const name of [...u.searchParams.keys()]) if (/password|secret/i.test(name)) u.searchParams.set(name, '***');
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** `host:port` of a connection URL, for messages. */
function hostPort(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || '5432'}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Translates the store's placeholders once, at prepare time: `?` becomes `$1, $2, ...` in order,
 * and `@name` becomes one `$n` per distinct name (bound from the single object argument). Quoted
 * strings, quoted identifiers and comments are left alone.
 */
export function translatePlaceholders(sql: string): { text: string; names: string[] | null } {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = closing(sql, i, c);
      out += sql.slice(i, end);
      i = end;
    } else if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      const end = nl < 0 ? sql.length : nl;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      const end = close < 0 ? sql.length : close + 2;
      out += sql.slice(i, end);
      i = end;
    } else if (c === '?') {
      out += `$${++positional}`;
      i++;
    } else if (c === '@' && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      let j = i + 1;
      while (j < sql.length && /\w/.test(sql[j])) j++;
      const name = sql.slice(i + 1, j);
      let n = names.indexOf(name);
      if (n < 0) n = names.push(name) - 1;
      out += `$${n + 1}`;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  if (positional && names.length) throw new Error('a statement may use ? or @name placeholders, not both');
  return { text: out, names: names.length ? names : null };
}

/** The index just past the quoted run that starts at `start` ('' and "" are escaped quotes). */
function closing(sql: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else i++;
  }
  return sql.length;
}

/** Structured clone gives Uint8Arrays for the Buffers pg returned (bytea): make them Buffers again. */
function fixRow(row: Record<string, unknown>): Record<string, unknown> {
  for (const k in row) {
    const v = row[k];
    if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  return row;
}

class PgStatement implements Statement {
  private plucked = false;
  constructor(
    private readonly db: PostgresDatabase,
    private readonly text: string,
    private readonly names: string[] | null,
  ) {}

  pluck(toggle = true): this {
    this.plucked = toggle;
    return this;
  }

  private bind(args: unknown[]): unknown[] {
    if (!this.names) return args;
    const obj = (args[0] ?? {}) as Record<string, unknown>;
    return this.names.map((n) => obj[n]);
  }

  private rows(args: unknown[]): { rows: Record<string, unknown>[]; fields: string[] } {
    const r = this.db.query(this.text, this.bind(args));
    return { rows: (r.rows ?? []).map(fixRow), fields: r.fields ?? [] };
  }

  run(...args: unknown[]): RunResult {
    const r = this.db.query(this.text, this.bind(args));
    return { changes: r.rowCount ?? 0, lastInsertRowid: 0 };
  }

  get(...args: unknown[]): unknown {
    const { rows, fields } = this.rows(args);
    const row = rows[0];
    if (row === undefined) return undefined;
    return this.plucked ? row[fields[0]] : row;
  }

  all(...args: unknown[]): unknown[] {
    const { rows, fields } = this.rows(args);
    return this.plucked ? rows.map((r) => r[fields[0]]) : rows;
  }
}

/** The notification callbacks of one channel. */
type Listeners = Map<string, Set<(payload: string) => void>>;

/**
 * The part of better-sqlite3's Database that the store modules use, on PostgreSQL. Opening it
 * connects (or throws a CliError saying why it could not); `close()` ends the worker thread.
 */
export class PostgresDatabase implements DB {
  /** The URL without its password. */
  readonly url: string;
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly notifyPort: MessagePort;
  private readonly flag: Int32Array;
  private nextId = 1;
  private depth = 0;
  private txStatus: 'I' | 'T' | 'E' = 'I';
  private isOpen = true;
  /** How long one request may take; migrations lift it (withoutRequestLimit). */
  private requestLimitMs = REQUEST_TIMEOUT_MS;
  private readonly listeners: Listeners = new Map();

  constructor(connectionString: string) {
    this.url = redactUrl(connectionString);
    const shared = new SharedArrayBuffer(4);
    this.flag = new Int32Array(shared);
    const requests = new MessageChannel();
    const notifications = new MessageChannel();
    this.port = requests.port1;
    this.notifyPort = notifications.port1;
    this.worker = new Worker(new URL('./bridge-worker.js', import.meta.url), {
      workerData: { connectionString, flag: shared, port: requests.port2, notifyPort: notifications.port2 },
      transferList: [requests.port2, notifications.port2],
      // Plain JavaScript: no TypeScript loader needed in the worker.
      execArgv: [],
    });
    this.worker.unref();
    this.notifyPort.on('message', (m: { channel: string; payload: string }) => this.deliver(m.channel, m.payload));
    this.notifyPort.unref();
    try {
      this.request({ mode: 'connect' });
    } catch (err) {
      this.shutdown();
      const reason = connectReason(err as PostgresError).split(connectionPassword(connectionString) || '\u0000').join('***');
      throw new CliError(`could not connect to PostgreSQL at ${hostPort(connectionString)}: ${reason}`);
    }
  }

  get open(): boolean {
    return this.isOpen;
  }

  /** True inside a transaction, as the server reports it (like better-sqlite3's, after a failed COMMIT it is false). */
  get inTransaction(): boolean {
    return this.isOpen && this.txStatus !== 'I';
  }

  prepare(sql: string): Statement {
    const { text, names } = translatePlaceholders(sql);
    return new PgStatement(this, text, names);
  }

  /** Runs `fn` with no time limit on each request (migrations: docs/deploy.md#migrations). */
  withoutRequestLimit<T>(fn: () => T): T {
    const was = this.requestLimitMs;
    this.requestLimitMs = UNLIMITED_MS;
    try {
      return fn();
    } finally {
      this.requestLimitMs = was;
    }
  }

  /** Runs one or more statements without parameters (migrations, BEGIN/COMMIT). */
  exec(sql: string): this {
    this.request({ mode: 'exec', sql, inTx: this.depth > 0 });
    return this;
  }

  /** @internal One statement with its parameters, for PgStatement. */
  query(sql: string, params: unknown[]): Reply {
    return this.request({ mode: 'query', sql, params, inTx: this.depth > 0 });
  }

  /** Ends the transaction (`sql`: COMMIT, RELEASE or ROLLBACK ...), which must still be open. */
  private endTx(sql: string): void {
    this.request({ mode: 'exec', sql, inTx: true });
  }

  /**
   * better-sqlite3's transaction(): BEGIN/COMMIT, or a SAVEPOINT when nested; a throw rolls back
   * (to the savepoint) and is rethrown. `immediate`, `deferred` and `exclusive` are the same here:
   * PostgreSQL locks rows, not the database.
   */
  transaction<F extends (...args: any[]) => any>(fn: F): Transaction<F> {
    const run = (...args: unknown[]): ReturnType<F> => {
      const nested = this.depth > 0;
      const name = `factory_sp${this.depth}`;
      this.exec(nested ? `SAVEPOINT ${name}` : 'BEGIN');
      this.depth++;
      let result: ReturnType<F>;
      try {
        result = fn(...args);
        if (result && typeof (result as { then?: unknown }).then === 'function') {
          throw new TypeError('Transaction function cannot return a promise');
        }
      } catch (err) {
        this.depth--;
        try {
          if (nested) this.endTx(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`);
          else if (this.txStatus !== 'I') this.endTx('ROLLBACK');
        } catch {
          // The original error says more than the failed rollback (the connection is likely gone).
        }
        throw err;
      }
      this.depth--;
      if (nested) this.endTx(`RELEASE SAVEPOINT ${name}`);
      else {
        try {
          this.endTx('COMMIT');
        } catch (err) {
          if (this.txStatus !== 'I') this.endTx('ROLLBACK');
          throw err;
        }
      }
      return result;
    };
    return Object.assign(run, { immediate: run, deferred: run, exclusive: run }) as unknown as Transaction<F>;
  }

  /** Calls `fn` with the payload of every notification on `channel` (docs/runtime.md#postgresql). */
  listen(channel: string, fn: (payload: string) => void): () => void {
    let set = this.listeners.get(channel);
    if (!set) {
      this.request({ mode: 'listen', channel });
      set = new Set();
      this.listeners.set(channel, set);
    }
    set.add(fn);
    return () => {
      const s = this.listeners.get(channel);
      if (!s?.delete(fn) || s.size > 0) return;
      this.listeners.delete(channel);
      if (this.isOpen) this.request({ mode: 'unlisten', channel });
    };
  }

  private deliver(channel: string, payload: string): void {
    for (const fn of [...(this.listeners.get(channel) ?? [])]) {
      try {
        fn(payload);
      } catch {
        // One listener's failure must not keep the others from hearing the notification.
      }
    }
  }

  close(): void {
    if (!this.isOpen) return;
    try {
      this.request({ mode: 'close' }, 5_000);
    } catch {
      // Closing anyway.
    }
    this.shutdown();
  }

  private shutdown(): void {
    this.isOpen = false;
    this.listeners.clear();
    this.notifyPort.close();
    this.port.close();
    void this.worker.terminate();
  }

  private request(req: { mode: string; sql?: string; params?: unknown[]; channel?: string; inTx?: boolean }, timeoutMs = this.requestLimitMs): Reply {
    if (!this.isOpen) throw new TypeError('The database connection is not open');
    const id = this.nextId++;
    // Answers to requests that timed out earlier are dropped here.
    while (receiveMessageOnPort(this.port));
    this.port.postMessage({ id, ...req });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = Atomics.load(this.flag, 0);
      let m;
      while ((m = receiveMessageOnPort(this.port))) {
        const reply = m.message as Reply;
        if (reply.id !== id) continue;
        if (reply.tx) this.txStatus = reply.tx;
        if (!reply.ok) {
          // 22021: a value with U+0000, which PostgreSQL's text cannot hold (SQLite keeps it). The
          // requests refuse one at their edges (docs/api.md#conventions); one that gets here anyway
          // is still the client's mistake, a 400, not a 500. Checked only when a statement fails.
          if (reply.error?.code === NUL_IN_TEXT) throw new FactoryError('invalid_request', 'A value of this request has a NUL character (U+0000), which cannot be stored or looked up.');
          throw new PostgresError(reply.error?.message ?? 'PostgreSQL request failed', reply.error?.code, reply.error?.constraint);
        }
        return reply;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new PostgresError(`PostgreSQL did not answer within ${Math.round(timeoutMs / 1000)} s`);
      Atomics.wait(this.flag, 0, seen, left);
    }
  }
}

/** Why a connection failed, in words (the system's codes for the common network failures). */
function connectReason(err: PostgresError): string {
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ENOTFOUND: 'the host name does not resolve',
    EAI_AGAIN: 'the host name does not resolve',
    ETIMEDOUT: 'the connection timed out',
    EHOSTUNREACH: 'the host is unreachable',
  };
  if (err.code && words[err.code]) return words[err.code];
  if (/timeout/i.test(err.message)) return 'the connection timed out';
  return err.message.replace(/\.$/, '');
}

function connectionPassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return '';
  }
}
