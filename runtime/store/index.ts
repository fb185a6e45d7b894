import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { CliError } from '../../core/errors.ts';
import type { Clock } from '../clock.ts';
import { open, seal } from '../crypto.ts';
import { openDatabase, type DB } from './db.ts';
import { KeyStore } from './keys.ts';
import { SecretStore } from './secrets.ts';
import { createDefinitionsStore, type DefinitionsStore } from './definitions.ts';
import { createDeliveryStore, type DeliveryStore } from './deliveries.ts';
import { RunStore } from './runs.ts';
import { ScheduleStore } from './schedules.ts';
import { LeaseStore } from './leases.ts';
import { RateWindowStore } from './rate-windows.ts';

/** What every store module is constructed with. Modules prepare their statements once. */
export interface StoreContext {
  /** For store modules only: SQL lives under runtime/store/. */
  readonly db: DB;
  readonly clock: Clock;
  /** 32 bytes: seals team secrets (runtime/crypto.ts). */
  readonly masterKey: Buffer;
}

export interface OpenStoreOptions {
  /** A file path or ':memory:'. */
  path: string;
  clock: Clock;
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
 * The interface is narrow on purpose (PostgreSQL may replace SQLite later): modules
 * take and return plain data, never statements or rows.
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
  readonly engine: 'sqlite' | 'postgres' = 'sqlite';
  /** SQLite: one process, so notifications stay in it (an in-process emitter). */
  private readonly channels = new EventEmitter().setMaxListeners(0);
  readonly rateWindows: RateWindowStore;

  constructor(ctx: StoreContext) {
    this.db = ctx.db;
    this.keys = new KeyStore(ctx);
    this.secrets = new SecretStore(ctx);
    this.defs = createDefinitionsStore(ctx);
    this.deliveries = createDeliveryStore(ctx);
    this.runs = new RunStore(ctx);
    this.schedules = new ScheduleStore(ctx);
    this.leases = new LeaseStore(ctx, this.runs);
    this.rateWindows = new RateWindowStore(ctx);
  }

  /** Calls `fn` with the payload of every notify on `channel`, until the returned function is called. */
  listen(channel: string, fn: (payload: string) => void): () => void {
    this.channels.on(channel, fn);
    return () => {
      this.channels.off(channel, fn);
    };
  }

  /** Tells the listeners of `channel` (asynchronously, as a database notification would arrive). */
  notify(channel: string, payload = ''): void {
    setImmediate(() => this.channels.emit(channel, payload));
  }

  /**
   * Runs `fn` in one SQLite transaction: all its writes commit together or none do. `fn` must
   * be synchronous (no `await` inside): better-sqlite3 commits when `fn` returns.
   * Transactions nest (inner ones become savepoints), so module methods that use their own
   * transaction compose.
   */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
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
    if (this.db.open) this.db.close();
  }
}

/** Opens the database at `path`, runs pending migrations and returns the store. */
export function openStore(options: OpenStoreOptions): Store {
  const db = openDatabase(options.path);
  const masterKey = options.masterKey ?? randomBytes(32);
  try {
    checkMasterKey(db, masterKey);
  } catch (err) {
    db.close();
    throw err;
  }
  return new Store({ db, clock: options.clock, masterKey });
}

const CHECK_AAD = Buffer.from('factory-master-key-check', 'utf8');

/**
 * On first open, seals a known value under the master key; on later opens, checks that the key
 * still opens it. A wrong FACTORY_MASTER_KEY or master.key then fails at start with a clear
 * sentence, instead of every secret failing to decrypt later.
 */
function checkMasterKey(db: DB, key: Buffer): void {
  const row = db.prepare(`SELECT value FROM meta WHERE key = 'master_key_check'`).get() as { value: Buffer } | undefined;
  if (!row) {
    db.prepare(`INSERT INTO meta (key, value) VALUES ('master_key_check', ?)`).run(seal(key, 'ok', CHECK_AAD));
    return;
  }
  try {
    open(key, row.value, CHECK_AAD);
  } catch {
    throw new CliError(
      'The master key does not match the one this database was created with; set FACTORY_MASTER_KEY or restore master.key.',
    );
  }
}
