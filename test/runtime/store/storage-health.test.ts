import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FakeClock } from '../../../runtime/clock.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { createLogger } from '../../../runtime/log.ts';
import { startServer } from '../../../runtime/server.ts';
import type { SqliteDB } from '../../../runtime/store/db.ts';
import { openStore } from '../../../runtime/store/index.ts';
import { PostgresError } from '../../../runtime/store/postgres/db.ts';
import { STORAGE_LOG_EVERY_MS, storageFailure } from '../../../runtime/store/storage-health.ts';
import { terminalEnv, runCliInProcess } from '../../helpers/cli.ts';
import { testDatabase } from '../../helpers/postgres.ts';
import { LogCapture, startTestRuntime, type TestRuntime } from '../helpers.ts';
import { createHook, deliver, type CreatedHook } from '../ingress/helpers.ts';

/** Storage failures (docs/runtime.md#when-storage-fails): a 503 that says so, one log line, /readyz, start-up. */

const sqliteOf = (rt: TestRuntime) => rt.store.db as unknown as SqliteDB;
/** The log lines about the storage's state: failing, still failing, working again. */
const storageLines = (logs: LogCapture) => logs.records().filter((r) => /^writes (fail|still fail|succeed again)/.test(String(r.msg)));
/** SQLite's own ceiling for max_page_count: no limit in practice. */
const NO_LIMIT = 4294967294;
/** A delivery to `hook`, with its credential. */
const post = (hook: CreatedHook, body: string) => deliver(hook.url, body, { Authorization: `Bearer ${hook.secret}` });

test('a full database: writes are answered 503 saying so, with one log line; /readyz\'s own small write ends that once it fits', async (t) => {
  const rt = await startTestRuntime({ sqlite: true });
  t.after(() => rt.stop());
  const hook = await createHook(rt, 'full', { name: 'h' });
  assert.equal((await post(hook, '{"n":0}')).status, 202);

  // The database may not grow past its size now: SQLITE_FULL, as on a disk with no space left.
  const db = sqliteOf(rt);
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
  const big = JSON.stringify({ pad: 'x'.repeat(200_000) });
  const answers = await Promise.all(Array.from({ length: 5 }, () => post(hook, big)));
  for (const res of answers) {
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '30');
    assert.equal(res.headers.get('x-should-retry'), 'true');
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal(body.code, 'service_unavailable');
    assert.equal(body.detail, "The runtime could not store this request: its database's disk is full; nothing was stored. Retry later.");
  }
  // A Koa route says the same: the secret's value is too big to fit.
  const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'big', value: 'v'.repeat(60_000) } });
  assert.equal(secret.status, 503);
  assert.match(((await secret.json()) as { detail: string }).detail, /disk is full; nothing was stored/);

  const lines = storageLines(rt.logs);
  assert.equal(lines.length, 1, `one line for six refused requests: ${JSON.stringify(lines)}`);
  assert.equal(lines[0].level, 50);
  assert.equal(lines[0].code, 'SQLITE_FULL');
  assert.equal(lines[0].database, join(rt.dataDir, 'factory.db'));
  assert.match(String(lines[0].msg), /^writes fail: the database's disk is full; requests that write are answered 503/);
  assert.ok(!rt.logs.text.includes('unhandled error'), 'no stack per request');

  assert.equal(rt.store.health.isFailing, true);

  // A small write still fits in the pages the database has (as in a WAL that is being reused on a
  // full disk): /readyz's own write finds out, logs one line, and the runtime is ready.
  const ready = await rt.fetch('/readyz', { key: null });
  assert.equal(ready.status, 200);
  const after = storageLines(rt.logs);
  assert.equal(after.length, 2);
  assert.equal(after[1].level, 30);
  assert.equal(after[1].msg, 'writes succeed again');
  assert.equal(after[1].refused, 6);
  db.pragma(`max_page_count = ${NO_LIMIT}`);
  assert.equal((await post(hook, big)).status, 202);
});

test('a read-only database: the CLI prints the runtime\'s sentence, /readyz answers 503 until a delivery is stored again', async (t) => {
  const rt = await startTestRuntime({ sqlite: true });
  t.after(() => rt.stop());
  const hook = await createHook(rt, 'ro', { name: 'h' });
  const db = sqliteOf(rt);
  // Every write of the runtime's connection fails with SQLITE_READONLY, as on a read-only file system.
  db.pragma('query_only = ON');
  const env = terminalEnv({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey });
  const cli = await runCliInProcess(['secret', 'create', 'token'], { env, stdin: 'value' });
  assert.equal(cli.code, 1);
  assert.equal(
    cli.stderr.trim(),
    'error: The runtime could not store this request: its database is read-only (the file system, or the files, may not be written); nothing was stored. Retry later.',
  );
  assert.equal((await post(hook, '{}')).status, 503);
  assert.equal(storageLines(rt.logs).length, 1);
  assert.equal(storageLines(rt.logs)[0].code, 'SQLITE_READONLY');
  // /readyz's own write fails too: 503, saying why and since when.
  for (let i = 0; i < 2; i++) {
    const unready = await rt.fetch('/readyz', { key: null });
    assert.equal(unready.status, 503);
    assert.match(((await unready.json()) as { detail: string }).detail, /^The runtime cannot store writes since \d{4}-.*Z: its database is read-only \(.*\) \(SQLITE_READONLY\)\.$/);
  }
  assert.equal(storageLines(rt.logs).length, 1, '/readyz adds no line');

  db.pragma('query_only = OFF');
  assert.equal((await post(hook, '{}')).status, 202);
  const lines = storageLines(rt.logs);
  assert.equal(lines.length, 2);
  assert.ok('failedForSeconds' in lines[1], 'the second line is the recovery, with how long writes failed');
  assert.equal((await rt.fetch('/readyz', { key: null })).status, 200);
});

test('while writes fail: a repeat line at most once a minute with the count; a read-only transaction ends nothing, a committed write does', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-storage-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clock = new FakeClock();
  const store = openStore({ path: join(dir, 'factory.db'), clock });
  t.after(() => store.close());
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug', destination: logs });
  const db = store.db as unknown as SqliteDB;
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true })}`);
  const fail = (): unknown => {
    try {
      store.secrets.create('s' + Math.random(), 'v'.repeat(60_000));
    } catch (err) {
      return err;
    }
    assert.fail('the write was expected to fail');
  };
  const err = fail();
  assert.equal((err as { code: string }).code, 'SQLITE_FULL');

  for (let i = 0; i < 10; i++) store.health.failed(err, log);
  assert.equal(storageLines(logs).length, 1);
  assert.equal(storageLines(logs)[0].refused, 1);
  clock.advance(STORAGE_LOG_EVERY_MS / 2);
  for (let i = 0; i < 3; i++) store.health.failed(fail(), log);
  assert.equal(storageLines(logs).length, 1, 'nothing more within the minute');
  clock.advance(STORAGE_LOG_EVERY_MS / 2);
  store.health.failed(fail(), log);
  const repeat = storageLines(logs)[1];
  assert.equal(repeat.msg, "writes still fail: the database's disk is full; 13 more requests refused since the last line");
  assert.equal(repeat.refused, 13);

  // Reading in a transaction commits nothing: still failing.
  store.runs.dueNotifications(clock.now(), 10);
  assert.equal(store.health.isFailing, true);
  // Any write of the store that commits ends it, with one line.
  db.pragma(`max_page_count = ${NO_LIMIT}`);
  store.secrets.create('fits', 'v');
  assert.equal(store.health.isFailing, false);
  const last = storageLines(logs).at(-1)!;
  assert.equal(last.msg, 'writes succeed again');
  assert.equal(last.refused, 14);
  assert.equal(storageLines(logs).length, 3);
});

test('storage failures of both engines and of the system are told apart from other errors', () => {
  const cases: [unknown, string | undefined][] = [
    [Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_FSYNC' }), 'io'],
    [Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY_DBMOVED' }), 'readonly'],
    [Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT_INDEX' }), 'corrupt'],
    [Object.assign(new Error('file is not a database'), { code: 'SQLITE_NOTADB' }), 'corrupt'],
    [Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }), undefined],
    [Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }), undefined],
    [new PostgresError('could not extend file: No space left on device', '53100'), 'full'],
    [new PostgresError('sorry, too many clients already', '53300'), 'resources'],
    [new PostgresError('could not read block', '58030'), 'io'],
    [new PostgresError('cannot execute INSERT in a read-only transaction', '25006'), 'readonly'],
    [new PostgresError('invalid page in block', 'XX001'), 'corrupt'],
    [new PostgresError('duplicate key value', '23505'), undefined],
    [new PostgresError('terminating connection due to administrator command', '57P01'), 'unreachable'],
    [new PostgresError('the transaction ended before its work was done (the connection to PostgreSQL was lost)', '08006'), 'unreachable'],
    [Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' }), 'full'],
    [Object.assign(new Error('EROFS'), { code: 'EROFS' }), 'readonly'],
    [new Error('no code'), undefined],
  ];
  for (const [err, kind] of cases) assert.equal(storageFailure(err)?.kind, kind, (err as Error).message);
});

test('PostgreSQL: a read-only transaction (25006) is a storage failure; it ends when a write commits, not before', async (t) => {
  const target = await testDatabase(t, 'postgres');
  if (!target) return;
  const store = target.open({ clock: new FakeClock() });
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug', destination: logs });
  store.db.exec('SET default_transaction_read_only = on');
  let err: unknown;
  try {
    store.secrets.create('s', 'v');
  } catch (e) {
    err = e;
  }
  assert.equal((err as { code?: string }).code, '25006');
  assert.equal(store.health.failed(err, log)?.kind, 'readonly');
  assert.match(String(storageLines(logs)[0].msg), /^writes fail: the database is read-only/);
  store.db.exec('SET default_transaction_read_only = off');
  store.runs.dueNotifications(new Date(), 10);
  assert.equal(store.health.isFailing, true, 'a transaction that wrote nothing ends nothing');
  // Nor does one whose write was in a savepoint that failed for a storage failure and was rolled
  // back (as an item of a group commit is): here the server's disk-full code, raised on purpose.
  store.transaction(() => {
    try {
      store.transaction(() => {
        store.secrets.create('small', 'v');
        store.db.exec("DO $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$");
      });
    } catch (e) {
      assert.equal(storageFailure(e)?.kind, 'full');
    }
  });
  assert.equal(store.secrets.get('small'), undefined);
  assert.equal(store.health.isFailing, true, 'a rolled-back savepoint ends nothing');
  store.secrets.create('s', 'v');
  assert.equal(store.health.isFailing, false);
  assert.equal(storageLines(logs).at(-1)!.msg, 'writes succeed again');
});

/** Overwrites a leaf page (not the root) of `table`'s b-tree in the closed database file `path`. */
function damageLeafOf(path: string, table: string): void {
  const db = new Database(path);
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const leaves = db.prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno").pluck().all(table) as number[];
  db.close();
  assert.ok(leaves.length > 2, `${table} spans several pages`);
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (leaves[1] - 1) * pageSize);
  closeSync(fd);
}

test('a damaged database: the start-up check finds it, logs it once, and /readyz answers 503; a sound one stays ready', async (t) => {
  const rt = await startTestRuntime({ sqlite: true, keepDataDir: true });
  t.after(() => rmSync(rt.dataDir, { recursive: true, force: true }));
  await rt.store.health.checked;
  assert.equal((await rt.fetch('/readyz', { key: null })).status, 200, 'a sound database passes its check');
  const payload = Buffer.alloc(1500, 0x61);
  const items = Array.from({ length: 200 }, (_, i) => ({ kind: 'accept' as const, facts: { webhookUid: 'wh_a', deliveryId: `d-${i}`, size: payload.length, receivedAt: new Date(1_700_000_000_000 + i) }, payload }));
  rt.store.deliveries.writeBatch(items, { identityDays: 30, rejectedKeep: 1000 });
  await rt.stop();
  damageLeafOf(join(rt.dataDir, 'factory.db'), 'deliveries');

  const again = await startTestRuntime({ sqlite: true, dataDir: rt.dataDir });
  t.after(() => again.stop());
  await again.store.health.checked;
  const res = await again.fetch('/readyz', { key: null });
  assert.equal(res.status, 503);
  assert.match(((await res.json()) as { detail: string }).detail, /^The runtime's database is damaged: PRAGMA quick_check (found|failed): .+; restore it from a backup\.$/);
  const damaged = again.logs.records().filter((r) => String(r.msg).startsWith('the database is damaged'));
  assert.equal(damaged.length, 1);
  assert.equal(damaged[0].level, 50);
});

test('a data dir whose database is not a database: the start fails in one sentence naming it', async (t) => {
  const rt = await startTestRuntime({ sqlite: true, keepDataDir: true });
  t.after(() => rmSync(rt.dataDir, { recursive: true, force: true }));
  await rt.stop();
  for (const suffix of ['-wal', '-shm']) rmSync(join(rt.dataDir, `factory.db${suffix}`), { force: true });
  writeFileSync(join(rt.dataDir, 'factory.db'), Buffer.alloc(8192, 0x5a));
  await assert.rejects(startTestRuntime({ sqlite: true, dataDir: rt.dataDir }), {
    name: 'CliError',
    message: `the database in ${rt.dataDir} is damaged (file is not a database); restore factory.db from a backup, or move it away to start with an empty one.`,
  });
});

// A real file system that fills up or is read-only: a small tmpfs, which only root may mount.
const NOT_ROOT = process.getuid?.() !== 0 && process.env.CI !== 'true' ? 'needs root to mount a small tmpfs (a full and a read-only file system)' : false;

test('a real full disk: deliveries are 202 or a 503 saying the disk is full, never 500; one line; the runtime recovers when space is back', { skip: NOT_ROOT }, async (t) => {
  const mnt = mkdtempSync(join(tmpdir(), 'factory-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mnt]);
  let rt: TestRuntime | undefined;
  t.after(async () => {
    await rt?.stop();
    try {
      execFileSync('umount', [mnt]);
    } catch (err) {
      // Something still holds a file there (a connection left open): fail, but leave no mount behind.
      execFileSync('umount', ['-l', mnt]);
      throw err;
    } finally {
      rmSync(mnt, { recursive: true, force: true });
    }
  });
  rt = await startTestRuntime({ sqlite: true, dataDir: join(mnt, 'data'), flags: { workDir: join(mnt, 'work') }, env: { FACTORY_RATE_DELIVERIES_PER_MINUTE: '1000000' } });
  const hook = await createHook(rt, 'disk', { name: 'h' });
  // Fill the disk.
  const filler = openSync(join(mnt, 'filler'), 'w');
  try {
    for (;;) writeSync(filler, Buffer.alloc(64 * 1024));
  } catch (err) {
    assert.equal((err as { code?: string }).code, 'ENOSPC');
  } finally {
    closeSync(filler);
  }
  const body = JSON.stringify({ pad: 'x'.repeat(50_000) });
  const statuses: number[] = [];
  for (let round = 0; round < 6; round++) {
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(hook, body)));
    for (const res of answers) {
      statuses.push(res.status);
      const text = await res.text();
      if (res.status === 503) assert.match(text, /could not store this request: its database's disk is full; nothing was stored/);
    }
  }
  assert.ok(statuses.every((s) => s === 202 || s === 503), `only 202 and 503: ${statuses.join(' ')}`);
  assert.ok(statuses.includes(503), 'the disk filled up');
  const failing = storageLines(rt.logs).filter((l) => l.level === 50);
  assert.equal(failing.length, 1, `one error line: ${JSON.stringify(failing)}`);
  assert.ok(!rt.logs.text.includes('unhandled error'));

  rmSync(join(mnt, 'filler'));
  assert.equal((await post(hook, body)).status, 202);
  assert.equal(storageLines(rt.logs).at(-1)!.msg, 'writes succeed again');
  await rt.stop();
  rt = undefined;

  // Start-up on the same file system, read-only now: one sentence naming the data dir, for an
  // existing data dir and for a new one (whose mkdir reports ENOENT, not EROFS).
  execFileSync('mount', ['-o', 'remount,ro', mnt]);
  const start = (dataDir: string) => startServer(parseConfig({ port: 0, dataDir, executor: 'direct' }, {}), { log: createLogger({ level: 'silent' }) });
  for (const dir of [join(mnt, 'data'), join(mnt, 'new', 'data')]) {
    await assert.rejects(start(dir), { name: 'CliError', message: `cannot use ${dir} as the data dir: the file system is read-only.` });
  }
  execFileSync('mount', ['-o', 'remount,rw', mnt]);
  mkdirSync(join(mnt, 'empty'));
  execFileSync('mount', ['-o', 'remount,ro', mnt]);
  await assert.rejects(start(join(mnt, 'empty')), { name: 'CliError', message: `cannot lock the data dir ${join(mnt, 'empty')}: the file system is read-only.` });
});
