import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import { CliError } from '../../core/errors.ts';
import type { Clock } from '../clock.ts';
import { open, seal } from '../crypto.ts';
import { Checkpointer, type CheckpointerOptions } from './checkpointer.ts';
import { openDatabase, type DB, type Dialect, type SqliteDB, type Statement } from './db.ts';
export { migrateSqliteFile } from './db.ts';
import { PostgresDatabase } from './postgres/db.ts';
import { migratePostgres } from './postgres/migrate.ts';
import { KeyStore } from './keys.ts';
import { SecretStore } from './secrets.ts';
import { createDefinitionsStore, type DefinitionsStore } from './definitions.ts';
import { createDeliveryStore, type DeliveryStore } from './deliveries.ts';
import { RunStore } from './runs.ts';
import { ScheduleStore } from './schedules.ts';
import { LeaseStore } from './leases.ts';
import { CHANNELS, type Channel } from './channels.ts';
export { CHANNELS, type Channel } from './channels.ts';
import { RateWindowStore } from './rate-windows.ts';
import { StorageHealth } from './storage-health.ts';
import { WalSync } from './wal-sync.ts';

/** What every store module is constructed with. Modules prepare their statements once. */
export interface StoreContext {
  /** For store modules only: SQL lives under runtime/store/. */
  readonly db: DB;
  /** Which SQL the modules write where the engines differ (docs/runtime.md#postgresql). */
  readonly dialect: Dialect;
  readonly clock: Clock;
  /** 32 bytes: seals team secrets (runtime/crypto.ts). */
  readonly masterKey: Buffer;
  /**
   * Tells whoever caches what `channel` (one of CHANNELS) names that it changed: on PostgreSQL every
   * replica on the same database, once the current write is over (docs/deploy.md#several-replicas);
   * on SQLite, which one process owns, this process's own listeners, at once (`Store.listen`).
   */
  readonly announce: (channel: Channel) => void;
  /** `Store.lockUntilCommit`, for the store modules that take turns across replicas. */
  readonly lockUntilCommit: (name: string) => void;
}

export interface OpenStoreOptions {
  /** A file path or ':memory:' (SQLite); unused when `databaseUrl` is given. */
  path: string;
  /** A postgres:// URL: the store is on PostgreSQL (migrated on open) instead of SQLite at `path`. */
  databaseUrl?: string;
  clock: Clock;
  /**
   * SQLite file only: checkpoint the WAL in a worker thread instead of inside the commits
   * (store/checkpointer.ts, docs/runtime.md#checkpoints). `factory serve` turns it on.
   */
  checkpointThread?: CheckpointerOptions;
  /**
   * The master key. When absent, a random key for this process only is used, which suits tests
   * that never reopen the file; startServer always passes the real one.
   */
  masterKey?: Buffer;
}

/**
 * The runtime's state, one module per area. To add an area: write `runtime/store/<area>.ts`
 * exporting a class constructed with `(ctx: StoreContext)`, then add its field and its
 * constructor line below (plus the import).
 *
 * The interface is narrow on purpose: modules take and return plain data, never statements or
 * rows, and run on SQLite or PostgreSQL alike; where the SQL of the two differs, a module picks
 * it by `ctx.dialect` (docs/runtime.md#postgresql).
 */
export class Store {
  /** For store modules only; nothing outside runtime/store/ may run SQL. */
  readonly db: DB;
  readonly keys: KeyStore;
  readonly secrets: SecretStore;
  readonly defs: DefinitionsStore;
  readonly deliveries: DeliveryStore;
  readonly runs: RunStore;
  readonly schedules: ScheduleStore;
  readonly leases: LeaseStore;
  /** Which database this is: one process owns a SQLite file; PostgreSQL may serve several replicas. */
  readonly engine: Dialect;
  /** Where the data is, for logs: the SQLite path, or the PostgreSQL URL without its password. */
  readonly location: string;
  /** SQLite: one process, so notifications stay in it (an in-process emitter). */
  private readonly channels = new EventEmitter().setMaxListeners(0);
  readonly rateWindows: RateWindowStore;
  /** Whether writes fail for a storage failure, and whether the database is damaged (docs/runtime.md#when-storage-fails). */
  readonly health: StorageHealth;
  /** SQLite with `checkpointThread`: the WAL's checkpoints, off the event loop. */
  checkpointer: Checkpointer | undefined;
  /**
   * A SQLite file: how the group commits make their batches durable, the WAL's fsync off the event
   * loop (store/wal-sync.ts). Undefined on PostgreSQL and in memory, where a COMMIT waits itself.
   */
  walSync: WalSync | undefined;
  /** PostgreSQL only: NOTIFY and the advisory lock, prepared once (notify() runs per cancel request). */
  private readonly pg: { notify: Statement; lock: Statement; time: Statement } | undefined;

  /** `ctx` without `announce` and `lockUntilCommit`: the store makes them for its engine. */
  constructor(base: Omit<StoreContext, 'announce' | 'lockUntilCommit'>) {
    this.db = base.db;
    this.engine = base.dialect;
    this.pg =
      base.db instanceof PostgresDatabase
        ? {
            notify: base.db.prepare('SELECT pg_notify(?, ?)'),
            lock: base.db.prepare('SELECT pg_advisory_xact_lock(hashtext(?)) AS locked'),
            // The server's own clock when it runs the statement (not the transaction's start).
            time: base.db.prepare('SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::float8 AS ms').pluck(),
          }
        : undefined;
    const ctx: StoreContext = { ...base, announce: announcer(base.db, this.channels), lockUntilCommit: (name) => this.lockUntilCommit(name) };
    this.location = ctx.db instanceof PostgresDatabase ? ctx.db.url : String((ctx.db as { name?: string }).name ?? '');
    // Before any module makes its transactions: every one that writes and commits is seen.
    this.health = new StorageHealth(ctx.db, ctx.dialect, this.location, ctx.clock);
    this.health.watchCommits();
    this.keys = new KeyStore(ctx);
    this.secrets = new SecretStore(ctx);
    this.defs = createDefinitionsStore(ctx);
    // Another replica's change: drop the definitions caches (the next read reloads them).
    if (this.engine === 'postgres') this.listen(CHANNELS.definitions, () => this.defs.invalidate());
    this.deliveries = createDeliveryStore(ctx);
    this.runs = new RunStore(ctx);
    this.schedules = new ScheduleStore(ctx);
    this.leases = new LeaseStore(ctx, this.runs);
    this.rateWindows = new RateWindowStore(ctx);
  }

  /** Calls `fn` with the payload of every notify on `channel`, until the returned function is called. */
  listen(channel: string, fn: (payload: string) => void): () => void {
    // PostgreSQL: LISTEN on the bridge's own connection; notifications arrive when the loop is free.
    if (this.db instanceof PostgresDatabase) return this.db.listen(channel, fn);
    this.channels.on(channel, fn);
    return () => {
      this.channels.off(channel, fn);
    };
  }

  /** Tells the listeners of `channel` (asynchronously, as a database notification would arrive). */
  notify(channel: string, payload = ''): void {
    // PostgreSQL: NOTIFY in the current transaction, if any, so it is delivered when that commits.
    if (this.pg) {
      this.pg.notify.run(channel, payload);
      return;
    }
    setImmediate(() => this.channels.emit(channel, payload));
  }

  /**
   * Runs `fn` in one transaction: all its writes commit together or none do. `fn` must be
   * synchronous (no `await` inside): the transaction commits when `fn` returns, on SQLite and on
   * PostgreSQL alike (docs/runtime.md#postgresql).
   * Transactions nest (inner ones become savepoints), so module methods that use their own
   * transaction compose.
   */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /**
   * Inside a transaction: waits until no other replica holds the lock `name`, then holds it until
   * the transaction ends, so replicas on one PostgreSQL database take turns at a check-then-write
   * (the bootstrap admin key, a schedule's fire). SQLite has one writer at a time already.
   */
  lockUntilCommit(name: string): void {
    if (!this.db.inTransaction) throw new Error('lockUntilCommit needs a transaction');
    this.pg?.lock.get(name);
  }

  /**
   * PostgreSQL: the database server's clock, in epoch milliseconds, read by one statement (the
   * replicas' common time, runtime/clock-check.ts). Undefined on SQLite, whose one process has no
   * other clock to agree with.
   */
  databaseTimeMs(): number | undefined {
    return this.pg ? (this.pg.time.get() as number) : undefined;
  }

  /** True when the database answers a trivial query (`GET /readyz`). */
  ping(): boolean {
    try {
      return (this.db.prepare('SELECT 1 AS ok').get() as { ok: number }).ok === 1;
    } catch {
      return false;
    }
  }

  close(): void {
    this.checkpointer?.stop();
    this.walSync?.close();
    void this.health.stop(0);
    if (this.db.open) this.db.close();
  }
}

/**
 * Opens the database (PostgreSQL at `databaseUrl` when given, else SQLite at `path`), runs
 * pending migrations and returns the store. Synchronous on both engines.
 */
export function openStore(options: OpenStoreOptions): Store {
  let db: DB;
  let dialect: Dialect;
  if (options.databaseUrl !== undefined) {
    const pg = new PostgresDatabase(options.databaseUrl);
    try {
      migratePostgres(pg);
    } catch (err) {
      pg.close();
      throw err;
    }
    db = pg;
    dialect = 'postgres';
  } else {
    db = openDatabase(options.path);
    dialect = 'sqlite';
  }
  const masterKey = options.masterKey ?? randomBytes(32);
  try {
    checkMasterKey(db, masterKey);
  } catch (err) {
    db.close();
    throw err;
  }
  const store = new Store({ db, dialect, clock: options.clock, masterKey });
  if (dialect === 'sqlite' && options.path !== ':memory:') {
    if (options.checkpointThread) store.checkpointer = new Checkpointer(db as SqliteDB, options.path, options.checkpointThread);
    store.walSync = new WalSync(db as SqliteDB, `${resolve(options.path)}-wal`, () => store.checkpointer?.ownsCheckpoints === true);
  }
  return store;
}

/**
 * The store's `announce` (StoreContext). PostgreSQL: NOTIFY on a microtask, i.e. once the synchronous write that announced is over and any
 * transaction it ran in has ended (transactions never span an await), so a replica that reloads on
 * the notification reads the committed change. Announcements of one turn on one channel are sent
 * once. A rolled-back write announces too: the other replicas reload for nothing, which is harmless.
 */
function announcer(db: DB, local: EventEmitter): (channel: Channel) => void {
  // SQLite: one process, so the announcement is for this process's listeners, told at once (it
  // comes after the write). A cache keyed by something a write can make stale (a secret deleted
  // and created again starts at version 1) hears of it on every engine.
  if (!(db instanceof PostgresDatabase)) return (channel) => void local.emit(channel, '');
  const pending = new Set<Channel>();
  const send = db.prepare('SELECT pg_notify(?, ?) AS sent');
  return (channel) => {
    if (pending.has(channel)) return;
    pending.add(channel);
    queueMicrotask(() => {
      pending.delete(channel);
      if (db.open) send.get(channel, '');
    });
  };
}

/**
 * Applies the PostgreSQL migrations not yet applied at `url` (`factory migrate`); returns the
 * versions applied now. Safe while replicas run or start: they take the same lock.
 */
export function migrateDatabase(url: string): number[] {
  const db = new PostgresDatabase(url);
  try {
    return migratePostgres(db);
  } finally {
    db.close();
  }
}

const CHECK_AAD = Buffer.from('factory-master-key-check', 'utf8');

/**
 * On first open, seals a known value under the master key; on later opens, checks that the key
 * still opens it. A wrong FACTORY_MASTER_KEY or master.key then fails at start with a clear
 * sentence, instead of every secret failing to decrypt later.
 */
function checkMasterKey(db: DB, key: Buffer): void {
  // Replicas opening a new database at once: the first insert wins, and every one checks that value.
  db.prepare(`INSERT INTO meta (key, value) VALUES ('master_key_check', ?) ON CONFLICT (key) DO NOTHING`).run(seal(key, 'ok', CHECK_AAD));
  const row = db.prepare(`SELECT value FROM meta WHERE key = 'master_key_check'`).get() as { value: Buffer };
  try {
    open(key, row.value, CHECK_AAD);
  } catch {
    throw new CliError(
      'The master key does not match the one this database was created with; set FACTORY_MASTER_KEY or restore master.key.',
    );
  }
}
