import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import type { Clock } from '../../runtime/clock.ts';
import { openStore, type Store } from '../../runtime/store/index.ts';

/**
 * PostgreSQL for tests (docs/runtime.md#postgresql). Each test gets a schema of its own on the test
 * server, so tests run side by side and leave nothing behind. FACTORY_TEST_DATABASE_URL names
 * another server.
 */
export const DEFAULT_TEST_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

export const testServerUrl = (): string => process.env.FACTORY_TEST_DATABASE_URL || DEFAULT_TEST_DATABASE_URL;

let reachable: Promise<string | undefined> | undefined;

/** Why the test server cannot be used (undefined when it can), asked once per process. */
function unreachable(): Promise<string | undefined> {
  reachable ??= (async () => {
    const c = new pg.Client({ connectionString: testServerUrl(), connectionTimeoutMillis: 5000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return undefined;
    } catch (err) {
      return (err as Error).message;
    } finally {
      await c.end().catch(() => {});
    }
  })();
  return reachable;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: testServerUrl() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * A URL to a fresh, empty schema (`f_<random>`, chosen by the URL's `options=-c search_path=...`),
 * dropped when the test ends. When the server cannot be reached: outside CI the test is skipped
 * with one line saying what is missing (and undefined returned: the test must return at once);
 * with CI=true, the test fails.
 */
export async function postgresUrl(t: TestContext): Promise<string | undefined> {
  const why = await unreachable();
  if (why !== undefined) {
    const where = new URL(testServerUrl());
    const message = `PostgreSQL is not reachable at ${where.hostname}:${where.port || '5432'}; start it (pg_ctlcluster ... main start) or set FACTORY_TEST_DATABASE_URL`;
    if (process.env.CI === 'true') throw new Error(`${message} (${why})`);
    t.skip(message);
    return undefined;
  }
  const { url, drop } = await createTestSchema();
  t.after(drop);
  return url;
}

/**
 * What must stop before a schema is dropped, by its URL: a runtime started on it (whose loops would
 * otherwise query tables that are gone). A test's after hooks run in the order they were
 * registered, and postgresUrl registers the drop before the test starts anything on the schema.
 */
const beforeDrop = new Map<string, (() => Promise<void>)[]>();

/** Has `stop` run (and awaited) before the schema at `url` is dropped. */
export function stopBeforeDrop(url: string, stop: () => Promise<void>): void {
  beforeDrop.set(url, [...(beforeDrop.get(url) ?? []), stop]);
}

/** A fresh schema on the test server: its URL, and the function that drops it. */
export async function createTestSchema(): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `f_${randomBytes(8).toString('hex')}`;
  await admin((c) => c.query(`CREATE SCHEMA ${schema}`));
  const url = new URL(testServerUrl());
  url.searchParams.set('options', `-c search_path=${schema}`);
  const href = url.toString();
  return {
    url: href,
    drop: async () => {
      const stops = beforeDrop.get(href) ?? [];
      beforeDrop.delete(href);
      await Promise.all(stops.map((stop) => stop()));
      await admin((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    },
  };
}

export type Engine = 'sqlite' | 'postgres';

/** The engines every store test runs on. */
export const engines = (): Engine[] => ['sqlite', 'postgres'];

/** One test's database on one engine: every `open` opens a store on the same database. */
export interface TestDatabase {
  engine: Engine;
  /** The SQLite file, or the PostgreSQL URL. */
  where: string;
  /**
   * Opens a store on this test's database, with the test's own master key unless given; it is
   * closed when the test ends (closing it earlier is fine).
   */
  open(options: { clock: Clock; masterKey?: Buffer }): Store;
}

/**
 * A database for this test on `engine`, or undefined when the test was skipped (no PostgreSQL
 * outside CI): then return at once.
 */
export async function testDatabase(t: TestContext, engine: Engine): Promise<TestDatabase | undefined> {
  let target: { path: string; databaseUrl?: string };
  if (engine === 'postgres') {
    const url = await postgresUrl(t);
    if (url === undefined) return undefined;
    target = { path: '', databaseUrl: url };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'factory-store-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    target = { path: join(dir, 'factory.db') };
  }
  // One master key per test database, so a reopened store opens its secrets.
  const masterKey = randomBytes(32);
  const opened: Store[] = [];
  // Whichever runs first, closing and the schema's drop do not wait on each other: the store's
  // connections are idle by then, and an idle connection holds no lock.
  t.after(() => {
    for (const s of opened) s.close();
  });
  return {
    engine,
    where: target.databaseUrl ?? target.path,
    open(options) {
      const store = openStore({ ...target, masterKey, ...options });
      opened.push(store);
      return store;
    },
  };
}

/**
 * Declares `name` once per engine (`name [sqlite]`, `name [postgres]`), each with a database of its
 * own: the store tests' way to hold both engines to the same behaviour.
 */
export function forEachEngine(name: string, fn: (t: TestContext, db: TestDatabase) => void | Promise<void>): void {
  for (const engine of engines()) {
    test(`${name} [${engine}]`, async (t) => {
      const db = await testDatabase(t, engine);
      if (db) await fn(t, db);
    });
  }
}

/**
 * Another replica's turn under the advisory lock `lock` (Store.lockUntilCommit), in a child process
 * of its own: it takes the lock in a transaction and runs `inTurn` in it; half of `holdMs` later it
 * runs `meanwhile` on a second connection (a change committed while the lock is held); the other
 * half later it commits. Resolves once the lock is held, or fails if the child ends first;
 * `ended` resolves when it has exited.
 */
export async function anotherReplicaHolding(
  url: string,
  lock: string,
  options: { inTurn?: string[]; meanwhile?: string[]; holdMs?: number } = {},
): Promise<{ ended: Promise<void> }> {
  const { inTurn = [], meanwhile = [], holdMs = 1000 } = options;
  const script = `import pg from 'pg';
    const [url, lock, inTurn, meanwhile, half] = JSON.parse(process.argv[1]);
    const holder = new pg.Client({ connectionString: url });
    const other = new pg.Client({ connectionString: url });
    await holder.connect();
    await other.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lock]);
    for (const sql of inTurn) await holder.query(sql);
    process.stdout.write('locked\\n');
    await new Promise((r) => setTimeout(r, half));
    for (const sql of meanwhile) await other.query(sql);
    await new Promise((r) => setTimeout(r, half));
    await holder.query('COMMIT');
    await holder.end();
    await other.end();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify([url, lock, inTurn, meanwhile, holdMs / 2])], {
    cwd: new URL('../../', import.meta.url),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ended = once(child, 'exit').then(() => undefined);
  await Promise.race([
    once(child.stdout!, 'data'),
    ended.then(() => {
      throw new Error(`the child holding the ${lock} lock ended before it held it`);
    }),
  ]);
  return { ended };
}
