import { applyPending, POSTGRES_MIGRATIONS_DIR, readMigrations, type Migration } from '../db.ts';
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
  // A migration of a large database, and the wait for another replica's, take what they take:
  // not the bridge's limit for one request.
  return db.withoutRequestLimit(() => {
    db.exec(`SELECT pg_advisory_lock(${lockKey})`);
    try {
      return applyPending(
        db,
        {
          exists: "SELECT to_regclass('schema_migrations')",
          table: `CREATE TABLE IF NOT EXISTS schema_migrations (
      version BIGINT PRIMARY KEY,
      name TEXT COLLATE "C" NOT NULL,
      applied_at TEXT COLLATE "C" NOT NULL
    )`,
        },
        migrations,
      );
    } catch (err) {
      // SQLSTATE 42501: this role may read and write the tables but not change the schema.
      if ((err as { code?: string }).code === '42501') {
        throw new CliError(`the database needs migrating, which the role of ${db.url} may not do (${(err as Error).message}); run \`factory migrate\` once as a role that owns the schema.`);
      }
      throw err;
    } finally {
      if (db.open) db.exec(`SELECT pg_advisory_unlock(${lockKey})`);
    }
  });
}
