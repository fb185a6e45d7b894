import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type SqliteDB } from '../../runtime/store/db.ts';

/**
 * How to undo each migration after 021 on a SQLite file ('' when it changed data only), so a test
 * can make the database an older release left and open it again as an upgrade would. A migration
 * that adds something to the schema adds its undo here; `databaseAsOf` refuses a gap.
 */
const UNDO: Readonly<Record<number, string>> = {
  // The claims' hash function: data only, rewritten by the claims index as it loads.
  22: '',
  23: 'ALTER TABLE runs DROP COLUMN owner',
  24: 'DROP INDEX runs_queued_by_owner',
  // PostgreSQL's rate windows out of its WAL: nothing on SQLite.
  25: '',
};

/**
 * A fresh SQLite database file as release `version` left it: every migration applied, then those
 * after `version` undone and their records deleted, so the next `openDatabase` applies them again.
 * Returns its path and the open connection (the caller writes its old rows, then closes it).
 */
export function databaseAsOf(t: { after(fn: () => void): void }, version: number): { path: string; db: SqliteDB } {
  const dir = mkdtempSync(join(tmpdir(), 'factory-upgrade-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'factory.db');
  const db = openDatabase(path);
  const later = (db.prepare('SELECT version FROM schema_migrations WHERE version > ? ORDER BY version DESC').pluck().all(version) as number[]);
  for (const v of later) {
    const undo = UNDO[v];
    if (undo === undefined) throw new Error(`migration ${v} has no undo in test/helpers/older-database.ts`);
    if (undo) db.exec(undo);
  }
  db.prepare('DELETE FROM schema_migrations WHERE version > ?').run(version);
  return { path, db };
}
