import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type Koa from 'koa';
import { CliError, FactoryError } from '../core/errors.ts';
import { writeRawProblem } from './http/problem.ts';
import { tightenMode } from '../core/file-mode.ts';
import { fsReason } from '../core/fs-reason.ts';
import { answerClientError } from './http/client-error.ts';
import { capConnections, connectionCap, HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from './http/connection-cap.ts';
import { systemClock, type Clock } from './clock.ts';
import { ClockCheck } from './clock-check.ts';
import type { Config } from './config.ts';
import { loadOrCreateMasterKey } from './crypto.ts';
import { writeFileDurably } from './durable-file.ts';
import { createLogger, type Logger } from './log.ts';
import { SERVICES, type Service, type Services } from './services.ts';
import { openStore, type Store } from './store/index.ts';
import { startupStorageError, unwritableReason } from './store/storage-health.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { listen } from './listen.ts';
import { HEALTHY } from './routes/health.ts';
import type { RuntimeFile } from './runtime-file.ts';

export interface RunningServer {
  /** The base URL actually served (with the real port when config.port was 0). */
  url: string;
  port: number;
  /** The config the app runs with (baseUrl and port filled in after listening). */
  config: Config;
  app: Koa;
  /** The node:http server (for tests that need its events). */
  server: Server;
  store: Store;
  services: Services;
  log: Logger;
  /** `<dataDir>/admin.key`, whether this start created it, and whether this data dir has it (docs/deploy.md#the-admin-key). */
  adminKeyPath: string;
  adminKeyCreated: boolean;
  adminKeyHere: boolean;
  /** Stops accepting, waits for in-flight requests, stops services, closes the database. Idempotent. */
  close(): Promise<void>;
}

export interface StartServerOptions {
  log?: Logger;
  clock?: Clock;
  /**
   * Shorter request timeouts, checked more often, for tests of what happens when they pass (Node
   * checks them every 30 s). The runtime always uses HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS.
   */
  requestTimeouts?: { headersMs: number; requestMs: number; checkEveryMs: number };
}

/** After this long, close() drops connections that are still busy. */
const FORCE_CLOSE_MS = 10_000;

/**
 * Starts the runtime (docs/runtime.md): listen, master key, store (migrations), admin key
 * bootstrap, services. Installs no signal handlers: `factory serve` does that.
 */
export async function startServer(config: Config, options: StartServerOptions = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger({ level: config.logLevel });
  const clock = options.clock ?? systemClock;
  // The work dir is made when the first run starts; one that cannot be would fail every run.
  for (const [dir, what] of [[config.dataDir, 'data dir'], [config.workDir, 'work dir']]) {
    if (existsSync(dir) && !statSync(dir).isDirectory()) throw new CliError(`cannot use ${dir} as the ${what}: it is not a directory.`);
  }
  try {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    // A recursive mkdir on a read-only file system reports ENOENT: ask the nearest existing parent.
    const why = ((err as NodeJS.ErrnoException).code === 'ENOENT' && unwritableReason(config.dataDir)) || fsReason(err);
    throw new CliError(`cannot use ${config.dataDir} as the data dir: ${why}.`);
  }
  // Before anything of the data dir is read: another runtime on it would lose its runs to this one.
  const lock = lockDataDir(config.dataDir);
  try {
    return await startLocked(config, options, log, clock, lock);
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function startLocked(config: Config, options: StartServerOptions, log: Logger, clock: Clock, lock: DataDirLock): Promise<RunningServer> {
  // A database sealed under a key that is gone: say so, before a new master.key is made that
  // could only fail to open it (and be mistaken for the right one later).
  if (config.masterKey === undefined && config.database.engine === 'sqlite' && existsSync(join(config.dataDir, 'factory.db')) && !existsSync(join(config.dataDir, 'master.key'))) {
    throw new CliError(`there is no master.key beside the existing database in ${config.dataDir}; restore master.key from a backup, or set FACTORY_MASTER_KEY to the key the database was made with.`);
  }
  // Requests that arrive before the app is ready wait for it instead of being dropped.
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let stopping = false;
  // While stopping, a keep-alive connection is closed as soon as its response is done, instead
  // of idling until the keep-alive timeout holds close() up. One listener function for every
  // response, and no promise per request once the app is ready: this runs for every delivery.
  const closeIdle = () => server.closeIdleConnections();
  const onFinish = () => {
    if (stopping) setImmediate(closeIdle);
  };
  const timeouts = options.requestTimeouts;
  const server = createServer({ connectionsCheckingInterval: timeouts?.checkEveryMs ?? 30_000 }, (req, res) => {
    res.on('finish', onFinish);
    if (handler) handler(req, res);
    else if (!answerWhileStarting(req, res)) void ready.then(() => handler!(req, res));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, log));
  // A sender that trickles its request holds a connection and its buffered body: the headers must
  // arrive within 20 s and the whole request within 60 s (Node's defaults are 60 s and 5 minutes),
  // then a 408 and the connection closed (docs/errors.md).
  server.headersTimeout = timeouts?.headersMs ?? HEADERS_TIMEOUT_MS;
  server.requestTimeout = timeouts?.requestMs ?? REQUEST_TIMEOUT_MS;
  const connections = capConnections(server, connectionCap(config.maxConnections), log);
  // Listen before any key or database is made: a --host or --port that cannot be listened on
  // leaves none of them behind (docs/runtime.md#the-data-dir).
  await listen(server, config.host, config.port);
  // The app (Koa, its router and every route's module) loads once the runtime listens: meanwhile
  // /healthz answers from answerWhileStarting, and other requests wait for the app.
  const appModule = import('./app.ts');
  appModule.catch(() => {});
  const stopListening = () => {
    server.closeAllConnections();
    server.close();
  };

  let store: Store;
  try {
    const masterKey = config.masterKey ?? loadOrCreateMasterKey(config.dataDir).key;
    store = openStore({
      path: join(config.dataDir, 'factory.db'),
      databaseUrl: config.database.engine === 'postgres' ? config.database.url : undefined,
      clock,
      masterKey,
      // The WAL's checkpoints in a thread of their own, off the event loop (docs/runtime.md#checkpoints).
      checkpointThread: { onFallback: (reason) => log.warn({ reason }, 'checkpoints are back on the main connection') },
    });
  } catch (err) {
    stopListening();
    // "unable to open database file" says neither where nor why: the data dir and the file system's reason.
    throw startupStorageError(err, config.dataDir, config.database.engine) ?? err;
  }
  // A damaged database must not be served as ready: checked in a thread, while the runtime serves.
  if (store.engine === 'sqlite') store.health.startQuickCheck(join(config.dataDir, 'factory.db'), log);

  try {
    // Replicas compare the times each of them writes: a machine whose clock is far from the
    // database's starts nothing (docs/deploy.md#clocks).
    const clockCheck = store.engine === 'postgres' ? new ClockCheck({ store, log, config }) : undefined;
    clockCheck?.verify();
    const admin = bootstrapAdminKey(store, config.dataDir, log);
    tightenDataDir(config.dataDir, log);

    const port = (server.address() as AddressInfo).port;
    // With port 0 the default base URL names port 0; use the port actually bound.
    const baseUrl = config.baseUrl.endsWith(':0') ? config.baseUrl.slice(0, -1) + String(port) : config.baseUrl;
    const finalConfig: Config = Object.freeze({ ...config, port, baseUrl });

    const services: Services = { connections };
    const started: Service[] = [];
    const stopServices = async () => {
      for (const s of started.reverse()) await s.stop?.();
    };
    try {
      // The clock check that let the runtime start goes on every minute (the lease sweep reads it).
      if (clockCheck) {
        services.clock = clockCheck;
        clockCheck.start();
        started.push(clockCheck);
      }
      for (const factory of SERVICES) {
        if (factory.enabled && !factory.enabled(finalConfig)) continue;
        const service = factory.create({ config: finalConfig, store, clock, log, services });
        services[factory.name] = service;
        await service.start?.();
        started.push(service);
      }
    } catch (err) {
      await stopServices();
      throw err;
    }

    const { appListener, createApp } = await appModule;
    const app = createApp({ config: finalConfig, store, clock, log, services });
    handler = appListener(app);
    markReady();
    // The claims' index in memory (SQLite) is read in steps, between requests, once the runtime
    // answers; a delivery that comes first reads the rest itself (docs/ingress.md#identity).
    store.deliveries.loadInBackground();
    log.info({ url: baseUrl, dataDir: config.dataDir, database: store.location }, 'factory runtime listening');
    const runtimeFile = writeRuntimeFile(config.dataDir, localUrl(config.host, port), clock, log);

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        stopping = true;
        for (const s of started) s.drain?.();
        const force = setTimeout(() => server.closeAllConnections(), FORCE_CLOSE_MS);
        force.unref();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        clearTimeout(force);
        await stopServices();
        // The check's and the checkpoint thread's connections close first, so the runtime's own close is the last one.
        await store.health.stop();
        await store.checkpointer?.stopAndWait();
        store.close();
        removeRuntimeFile(runtimeFile);
        lock.release();
        log.info('factory runtime stopped');
      })());

    return {
      url: baseUrl,
      port,
      config: finalConfig,
      app,
      server,
      store,
      services,
      log,
      adminKeyPath: admin.path,
      adminKeyCreated: admin.created,
      adminKeyHere: admin.created || existsSync(admin.path),
      close,
    };
  } catch (err) {
    stopListening();
    store.close();
    throw startupStorageError(err, config.dataDir, config.database.engine) ?? err;
  }
}

/**
 * The health routes while the runtime starts (its store opening, its services starting): answered
 * at once instead of waiting, `/readyz` with a 503 so that a load balancer keeps the replica out of
 * rotation until it is ready (docs/runtime.md#health). True when answered.
 */
export function answerWhileStarting(req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? '').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  if (path === '/healthz') {
    res.writeHead(200, { 'Content-Type': HEALTHY.type }).end(req.method === 'HEAD' ? undefined : HEALTHY.body);
    return true;
  }
  if (path !== '/readyz') return false;
  const starting = new FactoryError('service_unavailable', 'The runtime is starting: its database is not open yet.');
  writeRawProblem(res, starting, '/readyz', { head: req.method === 'HEAD' });
  return true;
}

/** The URL a CLI on this machine reaches the listener at: a wildcard bind is reached on loopback. */
function localUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/**
 * Writes `<dataDir>/runtime.json` (mode 0600) so the CLI finds this runtime without flags. Written
 * to a temporary name and renamed, so a reader never sees half a file. A runtime that dies without
 * closing leaves it behind; the CLI ignores a file whose pid is gone.
 */
function writeRuntimeFile(dataDir: string, url: string, clock: Clock, log: Logger): { path: string; content: string } | undefined {
  const path = join(dataDir, 'runtime.json');
  const body: RuntimeFile = { url, pid: process.pid, started_at: clock.now().toISOString() };
  const content = JSON.stringify(body, null, 2) + '\n';
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, path);
    return { path, content };
  } catch (err) {
    // Not fatal: the runtime serves as usual; the CLI then needs --server.
    log.warn({ err, path }, 'cannot write runtime.json; the CLI will need --server to find this runtime');
    return undefined;
  }
}

/** Removes runtime.json on a clean stop, unless another runtime on the same data dir has replaced it. */
function removeRuntimeFile(file: { path: string; content: string } | undefined): void {
  if (!file) return;
  try {
    if (readFileSync(file.path, 'utf8') === file.content) rmSync(file.path, { force: true });
  } catch {
    // Already gone: nothing to do.
  }
}

/** The files of the data dir that hold keys (the database's are the store's to keep 0600: store/db.ts). */
const KEY_FILES = ['master.key', 'admin.key', 'runtime.json'];

/**
 * The data dir is 0700 and its key files 0600 (docs/runtime.md#the-data-dir): a dir or file that existed
 * already (made by `mkdir -p`, a container volume, an old copy) keeps whatever mode it had, and
 * under `--executor direct` as root a run would read a readable one. Such a mode is tightened at
 * start, with one warning line saying what was changed.
 */
function tightenDataDir(dataDir: string, log: Logger): void {
  const tighten = (path: string, mode: number) => {
    const was = tightenMode(path, mode);
    if (was !== undefined) log.warn({ path, was: was.toString(8), now: mode.toString(8) }, 'this data dir path was readable by other users; its mode was tightened');
  };
  tighten(dataDir, 0o700);
  for (const name of KEY_FILES) tighten(join(dataDir, name), 0o600);
}

/**
 * On first start (no API key at all), creates an admin key named `admin` and writes it to
 * `<dataDir>/admin.key` with mode 0600 (docs/runtime.md). Logs the path, never the key. A crash
 * between writing the file and committing leaves no key, so the next start simply tries again.
 * Once per database: replicas starting together on one PostgreSQL database take turns, and only
 * the first writes a key, into its own data dir (docs/deploy.md#the-admin-key).
 */
export function bootstrapAdminKey(store: Store, dataDir: string, log: Logger): { path: string; created: boolean } {
  const path = join(dataDir, 'admin.key');
  if (store.keys.count() > 0) return { path, created: false };
  // The file is written inside the transaction: if writing fails, no key is stored.
  const id = store.transaction(() => {
    store.lockUntilCommit('bootstrap-admin-key');
    if (store.keys.count() > 0) return undefined;
    const { id, raw } = store.keys.create({ name: 'admin', kind: 'personal', scopes: ['admin'] });
    // On disk before the commit that records the key, so a power loss never leaves the key's row
    // with an empty file (and no way to bootstrap another).
    writeFileDurably(path, raw + '\n', { mode: 0o600 });
    return id;
  });
  if (id === undefined) return { path, created: false };
  log.info({ path, keyId: id }, 'created the admin API key; it is in this file');
  return { path, created: true };
}
