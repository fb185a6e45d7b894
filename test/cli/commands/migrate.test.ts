import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliInProcess } from '../../helpers/cli.ts';
import { postgresUrl } from '../../helpers/postgres.ts';
import { readMigrations } from '../../../runtime/store/db.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { systemClock } from '../../../runtime/clock.ts';

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
