import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { INHERITED_ENV, parseConfig, type ConfigFlags } from '../../runtime/config.ts';
import { createLogger } from '../../runtime/log.ts';
import { startServer, type RunningServer, type StartServerOptions } from '../../runtime/server.ts';
import type { Clock } from '../../runtime/clock.ts';
import { testExecutor } from './executor/helpers.ts';
import { createTestSchema, stopBeforeDrop } from '../helpers/postgres.ts';
import { ROOT } from '../helpers/cli.ts';

/** The example agents (scripted, failing, claude-stream), which test runtimes let sandboxed runs read. */
export const EXAMPLE_AGENTS = resolve(import.meta.dirname, '../../examples/agents');

/** Collects log lines written by a logger, for assertions on what was (not) logged. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    cb();
  }
  get text(): string {
    return this.lines.join('\n');
  }
  records(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

/** Options of a test runtime's `fetch`: `key` (null: no Authorization header), `json` (a body sent as JSON). */
export type ApiInit = RequestInit & { key?: string | null; json?: unknown };

/**
 * `fetch` relative to `baseUrl`, with the admin key unless `init.key` says otherwise. Each request
 * has a connection of its own (`Connection: close`): a runtime started in a file's `before` hook
 * idles while the other files of its process run their tests, and a kept-alive connection reused
 * just as the server's keep-alive timeout (5 s) closes it is reset (ECONNRESET), which a POST
 * cannot retry. Tests of keep-alive itself use sockets of their own.
 */
export function apiFetch(baseUrl: string, adminKey: string): (path: string, init?: ApiInit) => Promise<Response> {
  return (path, init = {}) => {
    const { key, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (!headers.has('Connection')) headers.set('Connection', 'close');
    const bearer = key === undefined ? adminKey : key;
    if (bearer !== null) headers.set('Authorization', `Bearer ${bearer}`);
    if (json !== undefined) headers.set('Content-Type', 'application/json');
    return fetch(baseUrl + path, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
  };
}

export interface TestRuntime extends RunningServer {
  dataDir: string;
  /** The bootstrap admin key (read from admin.key). */
  adminKey: string;
  logs: LogCapture;
  /** `fetch` relative to the server URL; `key` sets the Bearer header (default: the admin key; null: none). */
  fetch(path: string, init?: ApiInit): Promise<Response>;
  /** close() and remove the data dir (unless keepDataDir). */
  stop(): Promise<void>;
}

/**
 * A real runtime on 127.0.0.1 port 0 with a temp data dir and captured logs. Pass `dataDir` to
 * restart on an existing one (then `stop({keep})` semantics: the caller cleans up).
 */
export async function startTestRuntime(
  options: {
    flags?: ConfigFlags;
    env?: Record<string, string>;
    dataDir?: string;
    clock?: Clock;
    keepDataDir?: boolean;
    /** Always the data dir's SQLite file, even under FACTORY_TEST_ENGINE=postgres (a test of that file). */
    sqlite?: boolean;
    /** Always PostgreSQL at this URL (from `postgresUrl(t)`), with a master key of its own, whatever FACTORY_TEST_ENGINE says. */
    postgres?: string;
    /** Shorter request timeouts (startServer's option), to see what happens when they pass. */
    requestTimeouts?: StartServerOptions['requestTimeouts'];
  } = {},
): Promise<TestRuntime> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'factory-test-'));
  // Only the variables a real runtime would pass on to agents (PATH, HOME, ...) come from this
  // process; no stray FACTORY_* value of the test environment changes the config.
  const inherited = Object.fromEntries(INHERITED_ENV.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n]]])));
  // Runs execute in the sandbox (the default); the example agents are an installation it may read.
  const pg =
    // The schema behind `postgres` is the caller's (postgresUrl drops it when the test ends).
    options.postgres !== undefined ? { flags: { database: options.postgres }, env: { FACTORY_MASTER_KEY: randomBytes(32).toString('base64') }, drop: async () => {} }
    : options.sqlite ? undefined
    : await onPostgres(dataDir, options);
  const config = parseConfig(
    // Local repos: the tests' own (under the system's temp directory) and this project (the example's `url: ../..`).
    { port: 0, executor: testExecutor(), sandboxRoBind: [EXAMPLE_AGENTS], localRepos: [tmpdir(), ROOT], ...pg?.flags, ...options.flags, dataDir },
    { ...inherited, ...pg?.env, ...options.env },
  );
  const logs = new LogCapture();
  const server = await startServer(config, { log: createLogger({ level: 'debug', destination: logs }), clock: options.clock, requestTimeouts: options.requestTimeouts }).catch((err) => {
    if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const adminKey = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
  const keep = options.keepDataDir ?? options.dataDir !== undefined;
  // Closed by stop() or by the drop of the caller's schema, whichever comes first (close() is idempotent).
  if (options.postgres !== undefined) stopBeforeDrop(options.postgres, () => server.close());
  return {
    ...server,
    dataDir,
    adminKey,
    logs,
    fetch: apiFetch(server.url, adminKey),
    async stop() {
      await server.close();
      if (!keep) {
        await pg?.drop();
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(config.workDir, { recursive: true, force: true });
      }
    },
  };
}

/** The PostgreSQL schema (and master key) of each data dir, so a restart on it finds its state again. */
const pgByDataDir = new Map<string, { url: string; masterKey: string; drop: () => Promise<void> }>();

/**
 * FACTORY_TEST_ENGINE=postgres runs every test runtime on PostgreSQL (docs/runtime.md#postgresql):
 * a schema of its own on the test server (FACTORY_TEST_DATABASE_URL), kept with its data dir.
 * Runtimes given a database or a master key by their test stay as the test says.
 */
async function onPostgres(
  dataDir: string,
  options: { flags?: ConfigFlags; env?: Record<string, string> },
): Promise<{ flags: ConfigFlags; env: Record<string, string>; drop: () => Promise<void> } | undefined> {
  if (process.env.FACTORY_TEST_ENGINE !== 'postgres' || options.flags?.database !== undefined || options.env?.FACTORY_DATABASE_URL !== undefined) return undefined;
  if (options.env?.FACTORY_MASTER_KEY !== undefined) return undefined;
  let pg = pgByDataDir.get(dataDir);
  if (!pg) {
    const schema = await createTestSchema();
    pg = { ...schema, masterKey: randomBytes(32).toString('base64') };
    pgByDataDir.set(dataDir, pg);
  }
  const { url, masterKey, drop } = pg;
  return {
    flags: { database: url },
    env: { FACTORY_MASTER_KEY: masterKey },
    drop: async () => {
      pgByDataDir.delete(dataDir);
      await drop();
    },
  };
}

/**
 * Asserts that none of `values` is stored in the runtime's database in any form a careless write
 * would leave (as is, UTF-16, base64 or hex). On SQLite: the database file, its WAL and shared
 * memory, as bytes (the file must exist, so the check cannot pass by finding nothing). On
 * PostgreSQL (FACTORY_TEST_ENGINE=postgres): every row of every table of the runtime's schema,
 * as PostgreSQL writes it as text (bytea columns in hex).
 */
export function assertNotAtRest(rt: Pick<TestRuntime, 'store' | 'dataDir'>, values: readonly string[]): void {
  const stored: [string, Buffer][] = [];
  if (rt.store.engine === 'sqlite') {
    const db = join(rt.dataDir, 'factory.db');
    assert.ok(existsSync(db), `the database file ${db} exists`);
    for (const file of [db, `${db}-wal`, `${db}-shm`]) if (existsSync(file)) stored.push([file, readFileSync(file)]);
  } else {
    const tables = rt.store.db
      .prepare(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
      .pluck()
      .all() as string[];
    assert.ok(tables.includes('secrets'), `the runtime's tables were found (${tables.join(', ')})`);
    for (const table of tables) {
      const rows = rt.store.db.prepare(`SELECT t::text FROM "${table}" t`).pluck().all() as string[];
      stored.push([`table ${table}`, Buffer.from(rows.join('\n'))]);
    }
  }
  for (const value of values) {
    const forms = [Buffer.from(value), Buffer.from(value, 'utf16le'), Buffer.from(Buffer.from(value).toString('base64')), Buffer.from(Buffer.from(value).toString('hex'))];
    for (const [where, bytes] of stored) {
      for (const form of forms) assert.ok(!bytes.includes(form), `a value (${value.slice(0, 4)}…) is stored in ${where}`);
    }
  }
}
