import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, POSTGRES_MIGRATIONS_DIR, readMigrations } from '../../../runtime/store/db.ts';
import { migrateDatabase, openStore } from '../../../runtime/store/index.ts';
import { PostgresDatabase } from '../../../runtime/store/postgres/db.ts';
import { migratePostgres } from '../../../runtime/store/postgres/migrate.ts';
import { forEachEngine, postgresUrl } from '../../helpers/postgres.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

// SQLite only: its pragmas (PostgreSQL's counterpart is the next tests').
test('openDatabase: WAL, foreign keys, all migrations recorded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-db-'));
  try {
    const db = openDatabase(join(dir, 'f.db'));
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
    assert.equal(db.pragma('synchronous', { simple: true }), 2); // FULL: every commit fsynced
    const versions = (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);
    assert.deepEqual(versions, readMigrations().map((m) => m.version));
    assert.ok(versions.includes(1));
    assert.deepEqual(migrate(db), []); // idempotent
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('migrations run in numeric order, each in a transaction', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-mig-'));
  try {
    const m = join(dir, 'm');
    mkdirSync(m);
    writeFileSync(join(m, '010-b.sql'), 'CREATE TABLE b (x INTEGER REFERENCES a (x));');
    writeFileSync(join(m, '002-a.sql'), 'CREATE TABLE a (x INTEGER PRIMARY KEY);');
    writeFileSync(join(m, '011-bad.sql'), 'CREATE TABLE c (x); THIS IS NOT SQL;');
    writeFileSync(join(m, 'README.md'), 'ignored');
    const db = new Database(':memory:');
    const migs = readMigrations(m);
    assert.deepEqual(migs.map((x) => x.version), [2, 10, 11]);
    assert.throws(() => migrate(db, migs));
    const names = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((r) => r.name);
    assert.ok(names.includes('a') && names.includes('b'));
    assert.ok(!names.includes('c'), 'the failed migration left nothing behind');
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// SQLite builds a constant IN list of three values or more into a temporary table each time a
// statement evaluates it (an OpenEphemeral in its program): no CHECK of the schema may have one.
test('no CHECK of the SQLite schema is built into a table per statement, before or after an upgrade from 020', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-checks-'));
  try {
    const path = join(dir, 'f.db');
    const old = new Database(path);
    migrate(old, readMigrations().filter((m) => m.version <= 20));
    old.prepare(`INSERT INTO deliveries (webhook_uid, delivery_id, outcome, size, received_at, received_ms) VALUES ('wh_1', 'd1', 'rejected_auth', 3, 'x', 1)`).run();
    const ephemeral = (db: Database.Database) =>
      (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).pluck().all() as string[]).filter((t) =>
        (db.prepare(`EXPLAIN INSERT INTO "${t}" DEFAULT VALUES`).all() as { opcode: string }[]).some((op) => op.opcode === 'OpenEphemeral'),
      );
    // The test finds what it looks for: the schema of 020 had such lists.
    assert.deepEqual(ephemeral(old), ['deliveries', 'run_events', 'run_notifications', 'runs', 'webhooks']);
    // Another connection open during the upgrade reads the new text too (the schema version moved).
    const other = new Database(path);
    assert.deepEqual(ephemeral(other), ephemeral(old));
    assert.deepEqual(migrate(old), readMigrations().filter((m) => m.version > 20).map((m) => m.version));
    assert.deepEqual(ephemeral(old), []);
    assert.deepEqual(ephemeral(other), []);
    assert.equal(old.pragma('integrity_check', { simple: true }), 'ok');
    // The rows are as they were, and the rewritten checks still refuse what the lists refused.
    assert.equal(old.prepare('SELECT outcome FROM deliveries').pluck().get(), 'rejected_auth');
    for (const db of [old, other]) {
      assert.throws(
        () => db.prepare(`INSERT INTO deliveries (webhook_uid, delivery_id, outcome, size, received_at, received_ms) VALUES ('wh_1', 'd2', 'bogus', 3, 'x', 1)`).run(),
        (err: { code?: string }) => err.code === 'SQLITE_CONSTRAINT_CHECK',
      );
    }
    other.close();
    old.close();
    // A fresh database gets the same schema.
    const fresh = openDatabase(join(dir, 'fresh.db'));
    assert.deepEqual(ephemeral(fresh), []);
    fresh.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

forEachEngine('store: ping, transaction rollback, wrong master key refused on reopen', (_t, db) => {
  const key = randomBytes(32);
  const store = db.open({ clock: new FakeClock(), masterKey: key });
  assert.equal(store.ping(), true);
  assert.equal(store.engine, db.engine);
  assert.throws(() =>
    store.transaction(() => {
      store.secrets.create('a', 'v');
      throw new Error('boom');
    }),
  );
  assert.equal(store.secrets.get('a'), undefined);
  store.close();
  assert.equal(store.ping(), false);
  assert.throws(() => db.open({ clock: new FakeClock(), masterKey: randomBytes(32) }), /master key does not match/);
  db.open({ clock: new FakeClock(), masterKey: key }).close();
});

test('PostgreSQL has a migration for every SQLite one: the same NNN-name files', () => {
  const names = (dir?: string) => readMigrations(dir).map((m) => `${String(m.version).padStart(3, '0')}-${m.name}`);
  assert.deepEqual(names(POSTGRES_MIGRATIONS_DIR), names());
});

test('PostgreSQL migrations: all recorded once, even when several replicas start at once', async (t) => {
  const url = await postgresUrl(t);
  if (!url) return;
  const all = readMigrations(POSTGRES_MIGRATIONS_DIR).map((m) => m.version);
  // Three processes migrate at the same time: one applies, the others wait for its lock and find nothing.
  const code = `import { migrateDatabase } from ${JSON.stringify(new URL('../../../runtime/store/index.ts', import.meta.url).href)};
    process.stdout.write(JSON.stringify(migrateDatabase(${JSON.stringify(url)})));`;
  const results = await Promise.all(
    [0, 1, 2].map(async () => {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code]);
      return JSON.parse(stdout) as number[];
    }),
  );
  assert.deepEqual(results.flat().sort((a, b) => a - b), all, 'every migration applied exactly once');
  assert.deepEqual(migrateDatabase(url), []);
  const db = new PostgresDatabase(url);
  t.after(() => db.close());
  assert.deepEqual(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(), all);
});

test('a failing PostgreSQL migration leaves nothing of itself behind', async (t) => {
  const url = await postgresUrl(t);
  if (!url) return;
  const dir = mkdtempSync(join(tmpdir(), 'factory-pgmig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, '001-a.sql'), 'CREATE TABLE a (x BIGINT PRIMARY KEY);');
  writeFileSync(join(dir, '002-bad.sql'), 'CREATE TABLE c (x BIGINT); THIS IS NOT SQL;');
  const db = new PostgresDatabase(url);
  t.after(() => db.close());
  assert.throws(
    () => migratePostgres(db, readMigrations(dir)),
    (err: unknown) => {
      assert.match(String((err as Error).message), /syntax error/);
      assert.equal((err as { code?: string }).code, '42601', 'the SQLSTATE of a syntax error');
      return true;
    },
  );
  const tables = db.prepare(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`).pluck().all();
  assert.deepEqual(tables, ['a', 'schema_migrations']);
  assert.deepEqual(db.prepare('SELECT version FROM schema_migrations').pluck().all(), [1]);
  assert.equal(db.inTransaction, false);
});
