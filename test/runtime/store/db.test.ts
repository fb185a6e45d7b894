import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, readMigrations } from '../../../runtime/store/db.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';

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

test('store: ping, transaction rollback, wrong master key refused on reopen', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-store-'));
  try {
    const path = join(dir, 'f.db');
    const key = randomBytes(32);
    const store = openStore({ path, clock: new FakeClock(), masterKey: key });
    assert.equal(store.ping(), true);
    assert.throws(() =>
      store.transaction(() => {
        store.secrets.create('a', 'v');
        throw new Error('boom');
      }),
    );
    assert.equal(store.secrets.get('a'), undefined);
    store.close();
    assert.equal(store.ping(), false);
    assert.throws(() => openStore({ path, clock: new FakeClock(), masterKey: randomBytes(32) }), /master key does not match/);
    openStore({ path, clock: new FakeClock(), masterKey: key }).close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
