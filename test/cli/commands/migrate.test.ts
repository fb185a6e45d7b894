import { test } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import Database from 'better-sqlite3';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliInProcess } from '../../helpers/cli.ts';
import { postgresUrl } from '../../helpers/postgres.ts';
import { readMigrations } from '../../../runtime/store/db.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { systemClock } from '../../../runtime/clock.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';

/** `factory migrate` (docs/deploy.md#migrations): what it applied, then that nothing is left. */

const latest = readMigrations().at(-1)!.version;

test('migrate brings an empty PostgreSQL database up to date once, then says it is', async (t) => {
  const url = await postgresUrl(t);
  if (url === undefined) return;
  const first = await runCliInProcess(['migrate', '--database', url]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, new RegExp(`^applied ${readMigrations().length} migrations to postgres://.*: 001-core, 002-definitions, .*; schema version ${latest}\\.\\n$`));
  const again = await runCliInProcess(['migrate'], { env: { FACTORY_DATABASE_URL: url } });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, new RegExp(`is up to date \\(schema version ${latest}\\)\\.\\n$`));
});

test('migrate on a SQLite data dir; a data dir without a database is one sentence', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-migrate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const missing = await runCliInProcess(['migrate', '--data-dir', dir]);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, `error: there is no database at ${join(dir, 'factory.db')}; \`factory serve\` creates it at its first start (or pass --database for PostgreSQL).\n`);
  openStore({ path: join(dir, 'factory.db'), clock: systemClock }).close();
  const done = await runCliInProcess(['migrate', '--data-dir', dir]);
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stdout, `${join(dir, 'factory.db')} is up to date (schema version ${latest}).\n`);
});

test('a bad URL is a usage error, an unreachable server one sentence without the password', async () => {
  const bad = await runCliInProcess(['migrate', '--database', 'mysql://db/f']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^error: --database must be a PostgreSQL URL/);
  const down = await runCliInProcess(['migrate', '--database', 'postgres://u:s3cret@127.0.0.1:1/f']);
  assert.equal(down.code, 1);
  assert.equal(down.stderr.split('\n').filter(Boolean).length, 1, down.stderr);
  assert.match(down.stderr, /^error: could not connect to PostgreSQL at 127\.0\.0\.1:1/);
  assert.ok(!down.stderr.includes('s3cret'));
});

test('a database a newer release migrated is refused in one sentence, by migrate and by serve', async (t) => {
  // A data dir a runtime made (its database and master.key), then migrated by a release from the future.
  const made = await startTestRuntime({ keepDataDir: true, sqlite: true });
  await made.close();
  const dir = made.dataDir;
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const raw = new Database(join(dir, 'factory.db'));
  raw.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(latest + 1, 'from-the-future', new Date().toISOString());
  raw.close();
  const sentence = `error: the database is at schema version ${latest + 1}, newer than this release of factory knows (${latest}); run the release that migrated it, or a newer one.\n`;
  const migrate = await runCliInProcess(['migrate', '--data-dir', dir]);
  assert.equal(migrate.code, 1);
  assert.equal(migrate.stderr, sentence);
  const serve = await runCliInProcess(['serve', '--port', '0', '--data-dir', dir, '--executor', 'direct']);
  assert.equal(serve.code, 1);
  assert.equal(serve.stderr, sentence);
});

test('migrate beside a runtime on the same data dir says there is nothing to do while it runs', async (t) => {
  const rt = await startTestRuntime({ sqlite: true });
  t.after(() => rt.stop());
  const beside = await runCliInProcess(['migrate', '--data-dir', rt.dataDir]);
  assert.equal(beside.code, 1);
  assert.match(beside.stderr, /^error: the data dir .* is in use by another runtime \(pid \d+, http:\/\/127\.0\.0\.1:\d+\); it migrated the database when it started, so there is nothing to do while it runs\.\n$/);
});

test('postgres: a role that may read and write but not create runs an up-to-date schema, and says what it needs when one is pending', async (t) => {
  const url = await postgresUrl(t);
  if (url === undefined) return;
  assert.equal((await runCliInProcess(['migrate', '--database', url])).code, 0);
  const schema = new URL(url).searchParams.get('options')!.replace('-c search_path=', '');
  const role = `f_rw_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.after(async () => {
    await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    await admin.end();
  });
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
  await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
  await admin.query(`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`);
  const asRole = new URL(url);
  asRole.username = role;
  const upToDate = await runCliInProcess(['migrate', '--database', asRole.toString()]);
  assert.equal(upToDate.code, 0, upToDate.stderr);
  assert.match(upToDate.stdout, /is up to date/);
  // One migration pending: said in one sentence, with what to do.
  await admin.query(`DELETE FROM ${schema}.schema_migrations WHERE version = ${latest}`);
  const pending = await runCliInProcess(['migrate', '--database', asRole.toString()]);
  assert.equal(pending.code, 1);
  assert.match(pending.stderr, /^error: the database needs migrating, which the role of postgres:\/\/\S+ may not do \(.*\); run `factory migrate` once as a role that owns the schema\.\n$/);
});
