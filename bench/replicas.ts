/**
 * SQLite next to PostgreSQL with one and with two replicas (docs/deploy.md#several-replicas), in
 * one run: ingress throughput and run creation over HTTP, each setup a set of real
 * `factory serve --no-executor` processes (bin/factory.js, logs at info into /dev/null, as in
 * production), each PostgreSQL setup on a fresh schema of the server at 127.0.0.1:5432 (or
 * FACTORY_BENCH_DATABASE_URL), dropped at the end.
 *
 * Load comes from `wrk` (bench/wrk.ts), split evenly over a setup's replicas: one wrk per replica,
 * all at once, their req/s summed and their latencies shown per replica. Ingress: 1 KB
 * GitHub-signed push deliveries, each with a unique delivery id, to one automation whose filter
 * misses (the same bodies and factory as bench/ingress.ts), 64 connections in all, the per-sender
 * rate limit raised out of the way. Run creation: `POST /api/v1/agent/runs`, 16 connections in
 * all; no replica executes runs, so the runs stay QUEUED and cost nothing while measuring.
 * Server CPU is read from /proc for every replica and for the PostgreSQL backends serving them
 * (found by their application_name); PostgreSQL's own background processes are not counted.
 *
 * The issue sets no target for PostgreSQL: its figures are information. The run-creation target
 * of bench/runs.ts (p99 under 20 ms at 16 concurrent clients) is judged for every setup.
 *
 * `npm run bench -- replicas` (3 rounds of 5 s per row, rows alternating), `--quick` (1 of 2 s).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { compile } from '../cli/compiler/compile.ts';
import { factoryFiles, median, SECRET, SECRET_NAME, signedBodies, uidOf } from './ingress.ts';
import { TARGET_P99_MS } from './runs.ts';
import { freePort } from './serve.ts';
import { cpuMicros, runWrk, type SignedBody, type WrkResult } from './wrk.ts';

const INGRESS_CONNECTIONS = 64;
const CREATE_CONNECTIONS = 16;
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';
const BIN = fileURLToPath(new URL('../bin/factory.js', import.meta.url));

// ---------------------------------------------------------------------------------------------
// The server processes.

interface Replica {
  pid: number;
  url: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** `factory serve --no-executor` on a port of its own, once its /readyz answers 200. */
export async function startReplica(dataDir: string, env: NodeJS.ProcessEnv, database?: string): Promise<Replica> {
  const port = await freePort();
  const args = [BIN, 'serve', '--port', String(port), '--data-dir', dataDir, '--no-executor', ...(database ? ['--database', database] : [])];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`factory serve exited with ${exitCode}: ${stderr.trim()}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`factory serve was not ready within 60 s: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    pid: child.pid!,
    url,
    dataDir,
    stop: async () => {
      if (exitCode !== undefined) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

interface Setup {
  label: string;
  replicas: Replica[];
  /** The application_name of its PostgreSQL connections (undefined on SQLite). */
  appName?: string;
  /** The admin key, for the run API. */
  key: string;
}

/** The webhook, its secret and an environment, set up through the first replica's HTTP API. */
export async function provision(replica: Replica): Promise<string> {
  const key = readFileSync(path.join(replica.dataDir, 'admin.key'), 'utf8').trim();
  const api = async (method: string, route: string, body: unknown) => {
    const res = await fetch(replica.url + route, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
  };
  await api('POST', '/api/v1/secrets', { name: SECRET_NAME, value: SECRET });
  const { snapshot, diagnostics } = compile(factoryFiles('one'));
  if (!snapshot) throw new Error(`bench factory does not compile: ${JSON.stringify(diagnostics)}`);
  await api('POST', '/api/v1/factories/bench-one/apply', { snapshot });
  return key;
}

// ---------------------------------------------------------------------------------------------
// The measurement.

type Kind = 'ingress' | 'create';

interface Sample {
  /** One wrk result per replica. */
  perReplica: WrkResult[];
  factoryCpu: number;
  postgresCpu: number;
}

interface Row {
  setup: Setup;
  kind: Kind;
  samples: Sample[];
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const perSecond = (row: Row) => median(row.samples.map((s) => sum(s.perReplica.map((r) => r.accepted / r.seconds))));
const responses = (row: Row) => sum(row.samples.flatMap((s) => s.perReplica.map((r) => r.responses)));
const cpuPerRequest = (row: Row, which: 'factoryCpu' | 'postgresCpu') => sum(row.samples.map((s) => s[which])) / Math.max(1, responses(row));
/** The median over rounds of one replica's latency percentile. */
const latency = (row: Row, i: number, p: 'p50Ms' | 'p99Ms') => median(row.samples.map((s) => s.perReplica[i][p]));

export async function benchReplicas(print: (line: string) => void, opts: { quick?: boolean } = {}): Promise<void> {
  const rounds = opts.quick ? 1 : 3;
  const seconds = opts.quick ? 2 : 5;
  const serverUrl = process.env.FACTORY_BENCH_DATABASE_URL || DEFAULT_DATABASE_URL;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (err) {
    const where = new URL(serverUrl);
    print(`replicas: not measured: PostgreSQL is not reachable at ${where.hostname}:${where.port || '5432'} (${(err as Error).message}); start it or set FACTORY_BENCH_DATABASE_URL`);
    return;
  }
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-replicas-'));
  const schemas: string[] = [];
  const replicas: Replica[] = [];
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FACTORY_')));
  Object.assign(env, {
    FACTORY_MASTER_KEY: randomBytes(32).toString('base64'),
    FACTORY_RATE_DELIVERIES_PER_MINUTE: '1000000000',
    FACTORY_RATE_FAILED_AUTH_PER_MINUTE: '1000000000',
  });
  try {
    const version = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
    const syncCommit = (await admin.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0].synchronous_commit;

    /** A setup on PostgreSQL: a fresh schema, `count` replicas on it started one after another. */
    const postgresSetup = async (label: string, count: number): Promise<Setup> => {
      const schema = `bench_${randomBytes(6).toString('hex')}`;
      await admin.query(`CREATE SCHEMA ${schema}`);
      schemas.push(schema);
      const url = new URL(serverUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      url.searchParams.set('application_name', `factory-${schema}`);
      const started: Replica[] = [];
      for (let i = 0; i < count; i++) {
        // The first replica migrates and creates the admin key; the others find both done.
        const r = await startReplica(path.join(scratch, `${schema}-${i + 1}`), env, url.toString());
        replicas.push(r);
        started.push(r);
      }
      return { label, replicas: started, appName: `factory-${schema}`, key: await provision(started[0]) };
    };
    const sqliteReplica = await startReplica(path.join(scratch, 'sqlite'), env);
    replicas.push(sqliteReplica);
    const setups: Setup[] = [
      { label: 'SQLite, 1 process', replicas: [sqliteReplica], key: await provision(sqliteReplica) },
      await postgresSetup('PostgreSQL, 1 replica', 1),
      await postgresSetup('PostgreSQL, 2 replicas', 2),
    ];

    /** The PostgreSQL backends serving a setup, and the CPU each has used so far. */
    const backendPids = async (setup: Setup): Promise<number[]> => {
      if (!setup.appName) return [];
      const res = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [setup.appName]);
      return res.rows.map((r) => r.pid);
    };
    const cpuOf = (pids: number[]) =>
      sum(
        pids.map((pid) => {
          try {
            return cpuMicros(pid);
          } catch {
            return 0; // a backend that has gone away since
          }
        }),
      );

    const bodies = signedBodies(1024, 8);
    const createBody = (key: string): SignedBody[] => [
      {
        body: Buffer.from(JSON.stringify({ prompt: 'Benchmark run: summarise the repository.', config: { environment_id: 'bench-one' } })),
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      },
    ];
    const rows: Row[] = setups.flatMap((setup) => (['ingress', 'create'] as const).map((kind) => ({ setup, kind, samples: [] })));
    let runNumber = 0;
    const measure = async (row: Row, secs: number): Promise<Sample> => {
      const { setup, kind } = row;
      const n = setup.replicas.length;
      const connections = (kind === 'ingress' ? INGRESS_CONNECTIONS : CREATE_CONNECTIONS) / n;
      const pgPids = await backendPids(setup);
      const factoryBefore = cpuOf(setup.replicas.map((r) => r.pid));
      const pgBefore = cpuOf(pgPids);
      const perReplica = await Promise.all(
        setup.replicas.map((replica) => {
          const dir = mkdtempSync(path.join(scratch, 'wrk-'));
          const idPrefix = `r${++runNumber}`;
          const target =
            kind === 'ingress'
              ? { url: `${replica.url}/webhooks/w/${uidOf('one')}`, bodies, idHeader: 'X-GitHub-Delivery', idPrefix, collectIds: true }
              : { url: `${replica.url}/api/v1/agent/runs`, bodies: createBody(setup.key), idHeader: 'X-Bench-Request', idPrefix, collectIds: false, expectStatus: 201 };
          return runWrk(dir, target, { seconds: secs, connections });
        }),
      );
      return {
        perReplica,
        factoryCpu: cpuOf(setup.replicas.map((r) => r.pid)) - factoryBefore,
        postgresCpu: cpuOf(pgPids) - pgBefore,
      };
    };

    // Warm-up (JIT, statement caches, connections), not counted.
    for (const row of rows) await measure(row, 1);
    for (let r = 0; r < rounds; r++) {
      for (const row of rows) row.samples.push(await measure(row, seconds));
    }

    print(`replicas: ${rounds} round(s) of ${seconds} s per row, rows alternating; every process \`factory serve --no-executor\` logging at info to /dev/null`);
    print(`  PostgreSQL ${version} at ${new URL(serverUrl).host} (synchronous_commit ${syncCommit}), a fresh schema per setup; SQLite answers after the WAL's fsync`);
    print(`  wrk -t1 per replica, all at once, connections split evenly: ingress -c${INGRESS_CONNECTIONS} in all, run creation -c${CREATE_CONNECTIONS} in all`);
    print('  PostgreSQL has no target in the issue: its figures are information. Latencies are per replica (r1/r2).');
    const sqliteOf = (kind: Kind) => rows.find((x) => x.kind === kind && !x.setup.appName)!;
    const table = (kind: Kind, title: string, status: number) => {
      print(`  ${title}`);
      print(`    ${'setup'.padEnd(24)} ${`${status}/s`.padStart(7)} ${'p50 ms'.padStart(11)} ${'p99 ms'.padStart(11)} ${'CPU µs/req (factory + postgres)'.padStart(31)}   vs SQLite${kind === 'create' ? `   p99 < ${TARGET_P99_MS} ms` : ''}`);
      for (const row of rows.filter((x) => x.kind === kind)) {
        const n = row.setup.replicas.length;
        const lat = (p: 'p50Ms' | 'p99Ms') => Array.from({ length: n }, (_, i) => latency(row, i, p).toFixed(2)).join('/');
        const fCpu = cpuPerRequest(row, 'factoryCpu');
        const pCpu = cpuPerRequest(row, 'postgresCpu');
        const cpu = row.setup.appName ? `${(fCpu + pCpu).toFixed(0)} (${fCpu.toFixed(0)} + ${pCpu.toFixed(0)})` : fCpu.toFixed(0);
        const base = sqliteOf(kind);
        const vs =
          row === base
            ? '—'
            : `${(perSecond(row) / perSecond(base)).toFixed(2)}× req/s, ${((fCpu + pCpu) / cpuPerRequest(base, 'factoryCpu')).toFixed(2)}× CPU`;
        const worstP99 = Math.max(...Array.from({ length: n }, (_, i) => latency(row, i, 'p99Ms')));
        const target = kind === 'create' ? `   ${worstP99 < TARGET_P99_MS ? 'met' : 'NOT met'}` : '';
        print(`    ${row.setup.label.padEnd(24)} ${perSecond(row).toFixed(0).padStart(7)} ${lat('p50Ms').padStart(11)} ${lat('p99Ms').padStart(11)} ${cpu.padStart(31)}   ${vs}${target}`);
      }
    };
    table('ingress', 'ingress: 1 KB GitHub-signed push, a unique delivery id each, 1 automation whose filter misses', 202);
    table('create', `run creation: POST /api/v1/agent/runs, no executor (runs stay QUEUED); target p99 under ${TARGET_P99_MS} ms at ${CREATE_CONNECTIONS} connections`, 201);
    // Every delivery answered 202 has an Accepted entry with its payload, on every engine, read
    // from the database itself (the SQLite file read alongside its runtime, as WAL allows).
    const logged = async (setup: Setup): Promise<Set<string>> => {
      const accepted = (table: string, param: string) => `SELECT delivery_id FROM ${table} WHERE webhook_uid = ${param} AND outcome = 'accepted' AND payload IS NOT NULL`;
      if (!setup.appName) {
        const file = new Database(path.join(setup.replicas[0].dataDir, 'factory.db'), { readonly: true, fileMustExist: true });
        try {
          return new Set(file.prepare(accepted('deliveries', '?')).pluck().all(uidOf('one')) as string[]);
        } finally {
          file.close();
        }
      }
      const schema = setup.appName.slice('factory-'.length);
      const res = await admin.query<{ delivery_id: string }>(accepted(`${schema}.deliveries`, '$1'), [uidOf('one')]);
      return new Set(res.rows.map((r) => r.delivery_id));
    };
    const checks: string[] = [];
    let missing = 0;
    for (const row of rows.filter((x) => x.kind === 'ingress')) {
      const ids = row.samples.flatMap((s) => s.perReplica.flatMap((r) => r.ids));
      const inLog = await logged(row.setup);
      const absent = ids.filter((id) => !inLog.has(id)).length;
      missing += absent;
      checks.push(`${row.setup.label}: ${(ids.length - absent).toLocaleString('en-US')}/${ids.length.toLocaleString('en-US')}`);
    }
    print(`  every 202 in the log (an Accepted entry with its payload): ${checks.join('; ')} (${missing === 0 ? 'met' : 'NOT met'})`);
    for (const row of rows) {
      const failed = sum(row.samples.flatMap((s) => s.perReplica.map((r) => r.failed)));
      if (failed === 0) continue;
      const first = [...new Set(row.samples.flatMap((s) => s.perReplica.flatMap((r) => r.firstFailures)))].slice(0, 3);
      print(`  ${row.setup.label}, ${row.kind}: ${failed} answers were not ${row.kind === 'ingress' ? 202 : 201}${first.length ? `; first: ${first.join(' | ')}` : ''}`);
    }
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchReplicas((line) => console.log(line), { quick: process.argv.includes('--quick') });
}
