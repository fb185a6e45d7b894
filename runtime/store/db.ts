import Database from 'better-sqlite3';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tightenMode } from '../../core/file-mode.ts';
import { CliError } from '../../core/errors.ts';

/** The SQL dialect a store runs on (docs/runtime.md#postgresql). */
export type Dialect = 'sqlite' | 'postgres';

/**
 * What `run` reports: rows changed, and on SQLite only the inserted row's id. Code for both engines
 * uses RETURNING, except where SQLite's cost of it matters (store/deliveries.ts, the entry insert).
 */
export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** A prepared statement: `?` or `@name` placeholders, bound at each call. */
export interface Statement {
  run(...params: any[]): RunResult;
  get(...params: any[]): unknown;
  all(...params: any[]): unknown[];
  /** Rows become their first column's value. */
  pluck(toggle?: boolean): this;
}

/** better-sqlite3's transaction function: a plain call is BEGIN (or a SAVEPOINT when nested). */
type ArgumentTypes<F> = F extends (...args: infer A) => unknown ? A : never;
export type Transaction<F extends (...args: any[]) => any> = {
  (...args: ArgumentTypes<F>): ReturnType<F>;
  immediate(...args: ArgumentTypes<F>): ReturnType<F>;
  deferred(...args: ArgumentTypes<F>): ReturnType<F>;
  exclusive(...args: ArgumentTypes<F>): ReturnType<F>;
};

/**
 * The database as the store modules use it: better-sqlite3's Database on SQLite, and the same
 * subset on PostgreSQL (postgres/db.ts). Synchronous on both.
 */
export interface DB {
  prepare(sql: string): Statement;
  exec(sql: string): unknown;
  transaction<F extends (...args: any[]) => any>(fn: F): Transaction<F>;
  readonly inTransaction: boolean;
  readonly open: boolean;
  close(): unknown;
}

/** The SQLite database itself (pragmas, backups): for the SQLite engine's own code. */
export type SqliteDB = Database.Database;

/**
 * True when `err` is a constraint violation (a UNIQUE, CHECK, FOREIGN KEY or NOT NULL refusal)
 * on either engine: SQLite's SQLITE_CONSTRAINT* codes, PostgreSQL's SQLSTATE class 23.
 * On PostgreSQL the failed statement has aborted the transaction it ran in: only catch it where
 * the statement ran outside a transaction or in a savepoint of its own.
 */
export function isConstraintError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('SQLITE_CONSTRAINT') || /^23[0-9A-Z]{3}$/.test(code);
}

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
/** PostgreSQL's migrations: the same NNN-name files as SQLite's, in PostgreSQL's DDL. */
export const POSTGRES_MIGRATIONS_DIR = join(MIGRATIONS_DIR, 'postgres');

/**
 * Opens (creating if needed) the SQLite database at `path` (a file, or ':memory:') and brings
 * its schema up to date.
 *
 * - WAL: readers never block the writer, and a committed transaction is in the log before the
 *   call returns.
 * - synchronous = FULL: every commit is fsynced before it returns, so what the runtime has
 *   acknowledged (a 202 of the ingress, a 201 of the run API, an apply) survives a power loss or
 *   an OS crash too, not only a crash of the process. The cost is one fsync per commit; the two
 *   hot paths pay it once per event-loop turn for all their requests (store/group-commit.ts).
 * - foreign_keys = ON: SQLite leaves them off by default.
 * - busy_timeout: another connection (a CLI tool, a backup) holding the lock makes us wait
 *   instead of failing at once.
 */
export function openDatabase(path: string): SqliteDB {
  const db = connect(path);
  try {
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Opens `path` with the runtime's pragmas. A failure (a read-only or full file system, a damaged
 * file) closes what was opened: the caller says why in one sentence and nothing keeps the file open.
 */
function connect(path: string): SqliteDB {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    // The database holds every factory's payloads, transcripts and sealed secrets: its files are the
    // runtime's alone (SQLite would make them with the process's umask, 0644 as a rule). The -wal and
    // -shm files SQLite makes later take the database file's mode.
    if (path !== ':memory:') for (const file of [path, `${path}-wal`, `${path}-shm`]) tightenMode(file, 0o600);
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma('busy_timeout = 5000');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Applies the pending migrations of the SQLite file at `path` (`factory migrate`); returns the versions applied now. */
export function migrateSqliteFile(path: string): number[] {
  const db = connect(path);
  try {
    return migrate(db);
  } finally {
    db.close();
  }
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** `NNN-name.sql` files of `dir`, in numeric order. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir)) {
    const m = /^(\d{3})-([a-z0-9-]+)\.sql$/.exec(file);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2], sql: readFileSync(join(dir, file), 'utf8') });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i].version === out[i - 1].version) throw new Error(`two migrations are numbered ${out[i].version}`);
  }
  return out;
}

/**
 * Applies every migration not yet recorded in `schema_migrations`, in numeric order, each in
 * its own transaction (a failing migration leaves no half-applied schema). Returns the versions
 * applied now.
 */
export function migrate(db: SqliteDB, migrations: Migration[] = readMigrations()): number[] {
  return applyPending(
    db,
    { exists: "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'", table: `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  ) STRICT` },
    migrations,
    (m) => execSqlite(db, m),
  );
}

/**
 * Runs one SQLite migration. One that edits the text of the schema (`PRAGMA writable_schema`, for
 * a change SQLite's ALTER TABLE cannot make and that leaves every stored row as it is, such as a
 * CHECK rewritten to an equivalent expression) follows SQLite's own procedure for it: the
 * connection's defensive mode, which refuses such edits, is lifted for that migration alone, and
 * the schema version is raised by one so that every connection reads the new text.
 */
function execSqlite(db: SqliteDB, m: Migration): void {
  if (!/\bwritable_schema\b/i.test(m.sql)) {
    db.exec(m.sql);
    return;
  }
  const version = db.pragma('schema_version', { simple: true }) as number;
  db.unsafeMode(true);
  try {
    db.exec(m.sql);
    db.pragma(`schema_version = ${version + 1}`);
  } finally {
    db.unsafeMode(false);
  }
}

/**
 * The migration loop of both engines (docs/deploy.md#migrations): creates `schema_migrations`
 * with the engine's own DDL (`table`) only when `exists` finds none (so a role without the right
 * to create may run an up-to-date database), refuses a database a newer release has migrated, then
 * applies every migration not recorded, in order, each in its own transaction with its record,
 * checking the record again inside it (another process may have applied it meanwhile). `exec`
 * runs one migration (SQLite's runner passes `execSqlite`). Returns the versions applied now.
 */
export function applyPending(
  db: DB,
  schema: { exists: string; table: string },
  migrations: Migration[],
  exec: (m: Migration) => void = (m) => db.exec(m.sql),
): number[] {
  if (db.prepare(schema.exists).pluck().get() == null) db.exec(schema.table);
  const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
  const known = migrations.at(-1)?.version ?? 0;
  const newest = Math.max(0, ...applied);
  if (newest > known) {
    throw new CliError(`the database is at schema version ${newest}, newer than this release of factory knows (${known}); run the release that migrated it, or a newer one.`);
  }
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const recorded = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').pluck();
  const done: number[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    const ran = db.transaction(() => {
      if (recorded.get(m.version) !== undefined) return false;
      exec(m);
      record.run(m.version, m.name, new Date().toISOString());
      return true;
    }).immediate();
    if (ran) done.push(m.version);
  }
  return done;
}
