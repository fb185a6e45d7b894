import { POSTGRES_MIGRATIONS_DIR, readMigrations, type Migration } from '../db.ts';
import { CliError } from '../../../core/errors.ts';
import type { PostgresDatabase } from './db.ts';

/**
 * PostgreSQL's migration runner (docs/runtime.md#postgresql): the same `schema_migrations` table
 * as SQLite's, each migration in its own transaction, all under an advisory lock of the schema so
 * that replicas starting at once migrate it once (the others wait, then find nothing to do).
 * Returns the versions applied now.
 */
export function migratePostgres(db: PostgresDatabase, migrations: Migration[] = readMigrations(POSTGRES_MIGRATIONS_DIR)): number[] {
  // current_schema() is NULL when no schema of the search_path exists: nothing could be created.
  const schema = db.prepare('SELECT current_schema() AS s').pluck().get() as string | null;
  if (schema === null) {
    const path = db.prepare('SHOW search_path').pluck().get() as string;
    throw new CliError(`PostgreSQL at ${db.url} has no schema of the search path (${path}) to create the tables in; create it (CREATE SCHEMA ...) or change search_path.`);
  }
  const lockKey = `hashtext('factory-migrate:' || current_schema())`;
  db.exec(`SELECT pg_advisory_lock(${lockKey})`);
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version BIGINT PRIMARY KEY,
      name TEXT COLLATE "C" NOT NULL,
      applied_at TEXT COLLATE "C" NOT NULL
    )`);
    const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const done: number[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      db.transaction(() => {
        db.exec(m.sql);
        record.run(m.version, m.name, new Date().toISOString());
      })();
      done.push(m.version);
    }
    return done;
  } finally {
    if (db.open) db.exec(`SELECT pg_advisory_unlock(${lockKey})`);
  }
}
