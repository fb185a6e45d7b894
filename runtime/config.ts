import { isAbsolute, relative, resolve } from 'node:path';
import { usageError } from '../core/errors.ts';
import { parseAllowEntry, parseDelay, type AllowEntry } from '../core/notify.ts';

/** The limits of docs/runtime.md#limits, plus the runtime's own caps. Every value is a positive integer. */
export interface Limits {
  /** Ingress body cap in bytes (pipeline step 5, docs/ingress.md). */
  ingressBodyBytes: number;
  /** Deliveries per minute per webhook and sender address (docs/ingress.md#rate-limits). */
  deliveriesPerMinute: number;
  /** Failed authentications per minute per webhook and sender address (docs/ingress.md#rate-limits). */
  failedAuthPerMinute: number;
  webhooksPerFactory: number;
  /** Delivery log: newest N per webhook are always kept ... */
  deliveryLogKeep: number;
  /** ... and everything from the last N days (docs/ingress.md#delivery-log). */
  deliveryLogDays: number;
  /** Accepted delivery identities are remembered this many days (docs/ingress.md#identity). */
  identityDays: number;
  /** Delivery log: only the newest N Rejected entries per webhook are kept, whatever their age (docs/ingress.md#delivery-log). */
  rejectedLogKeep: number;
  /** Signature age tolerance, both directions (docs/signatures.md). */
  signatureToleranceSeconds: number;
  runListDefault: number;
  runListMax: number;
  /** Workspaces of finished runs are removed after this many hours (docs/runs.md). */
  workspaceRetentionHours: number;
  /** Cap on management and run API JSON bodies (not the ingress). */
  apiBodyBytes: number;
  /** Cap on plan and apply bodies, as sent and once gzip-decompressed (docs/plan-apply.md#large-factories). */
  definitionsBodyBytes: number;
  /** Cap on a run creation body, which carries its images as base64 (docs/api.md#conventions). */
  runCreateBodyBytes: number;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Where a run's commands execute (docs/security.md#sandbox). */
export type ExecutorKind = 'sandbox' | 'direct';

/** The sandboxed executor's settings (docs/security.md#sandbox). */
export interface SandboxSettings {
  /** The bubblewrap program: FACTORY_BWRAP, default `bwrap` from PATH. */
  readonly bwrap: string;
  /** Absolute host directories every command may read (an agent's installation), in order. */
  readonly roBinds: readonly string[];
  /** RLIMIT_DATA of each process, and the size of its private /tmp, in MiB. */
  readonly memoryMb: number;
  /** RLIMIT_NPROC: processes of the run's user id (counted across every run using that id). */
  readonly maxProcesses: number;
  /** RLIMIT_NOFILE of each process. */
  readonly maxOpenFiles: number;
  /**
   * Disk the run's workspace may take, in MiB, measured every few seconds (runtime/executor/disk.ts);
   * 0 for no limit. Every run, direct ones included.
   */
  readonly diskMb: number;
}

/** The default of --sandbox-disk-mb: 20 GiB for one run's workspace (docs/security.md#limits). */
const DEFAULT_DISK_MB = 20_480;

/** What parseConfig needs to know about the process it configures (tests pass their own). */
export interface HostFacts {
  platform: NodeJS.Platform;
  /** The runtime's user id; undefined where there are none (Windows). */
  uid: number | undefined;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /**
   * Where `GET /metrics` is served, on `host` (docs/runtime.md#metrics); undefined: not served.
   * A port of its own, so the metrics never share the internet-facing port with the webhooks.
   */
  readonly metricsPort: number | undefined;
  /** No trailing slash. Ingress URLs and session links are built from it. */
  readonly baseUrl: string;
  /** Absolute path. */
  readonly dataDir: string;
  /**
   * Where the state lives (docs/deploy.md#the-database): `sqlite` (the default) is
   * `<dataDir>/factory.db`; `postgres` is the server at `url`, shared by every replica.
   */
  readonly database: DatabaseSettings;
  /** 32 bytes from FACTORY_MASTER_KEY, or undefined: loaded or generated at start (runtime/crypto.ts). */
  readonly masterKey: Buffer | undefined;
  /** Read the client address from X-Forwarded-For (docs/runtime.md). */
  readonly trustProxy: boolean;
  readonly maxConcurrentRuns: number;
  /**
   * Most connections the HTTP server holds at once (docs/runtime.md#connections); undefined: chosen
   * at start from the process's open-file limit (runtime/server.ts `connectionCap`).
   */
  readonly maxConnections: number | undefined;
  /**
   * False with --no-executor (docs/runs.md#workers): this process executes no run and leaves them
   * to workers, while it still serves the APIs and sweeps expired leases.
   */
  readonly executeRuns: boolean;
  /** How long an executor's lease on a run lasts without a heartbeat (docs/runs.md#workers). */
  readonly leaseSeconds: number;
  readonly logLevel: LogLevel;
  readonly limits: Readonly<Limits>;
  /**
   * The runtime's variables that agents and setup commands inherit (docs/runs.md, "a minimal
   * inherited environment"): only INHERITED_ENV, taken once from the environment parseConfig was
   * given.
   */
  readonly inheritedEnv: Readonly<Record<string, string>>;
  /** `sandbox` (bubblewrap; the default on Linux) or `direct` (the runtime's own view of the machine). */
  readonly executor: ExecutorKind;
  /** Whether --executor or FACTORY_EXECUTOR chose it: `factory dev` falls back to direct only when not. */
  readonly executorChosen: boolean;
  /** Set when `factory dev` fell back to direct and has said so: the executor need not warn again. */
  readonly directAnnounced?: boolean;
  /** Absolute; holds `<run_id>/` workspaces. Never the data dir nor inside it, nor around it. */
  readonly workDir: string;
  /**
   * The user and group a run's commands run as when the runtime runs as root (default 65534,
   * `nobody`), under either executor; undefined when the runtime is not root.
   */
  readonly runAs: Readonly<{ uid: number; gid: number }> | undefined;
  readonly sandbox: SandboxSettings;
  /** Run notifications (docs/api.md#run-notifications). */
  readonly notify: NotifySettings;
  /**
   * Where a Warp agent's `repositories` are cloned from (docs/definitions.md#warp-agents-run-here):
   * `owner/repo` is `<repositoryBase>/owner/repo`. A URL without a trailing slash, or an absolute
   * directory of mirrors; default https://github.com.
   */
  readonly repositoryBase: string;
  /**
   * The directories a repo given as a local path (`/srv/app`, `file://...`) may lie in
   * (docs/security.md#local-repositories): `--local-repos`, plus a directory `repositoryBase`.
   * Null: anywhere the run's user can read (`dev`, where the author is the operator).
   */
  readonly localRepos: readonly string[] | null;
  /** Whether `--local-repos` or FACTORY_LOCAL_REPOS named any (`dev` allows any local repo otherwise). */
  readonly localReposChosen: boolean;
}

/** The database (docs/deploy.md#the-database). */
export type DatabaseSettings =
  | { readonly engine: 'sqlite' }
  | {
      readonly engine: 'postgres';
      /** The connection URL as given, password included: only the store's connection sees it. */
      readonly url: string;
      /** The URL without its password, for logs and messages. */
      readonly display: string;
    };

/** Where and how run notifications are sent (docs/api.md#run-notifications). */
export interface NotifySettings {
  /** --notify-allow / FACTORY_NOTIFY_ALLOW: the only targets, or null: any http(s) URL. */
  readonly allow: readonly AllowEntry[] | null;
  /** The wait before each retry (one entry per retry): 6 attempts over about 10 minutes by default. */
  readonly retryDelaysMs: readonly number[];
  /** How long one attempt may take. */
  readonly timeoutMs: number;
}

/** The default retry waits: 10s, 30s, 1m, 3m, 5m (6 attempts within 9m40s of the first). */
const DEFAULT_NOTIFY_RETRY_DELAYS_MS: readonly number[] = [10_000, 30_000, 60_000, 180_000, 300_000];

/**
 * Variables a run's processes inherit from the runtime; nothing else, so no FACTORY_* value (the
 * master key, API keys) and no provider key of the runtime's own reaches an agent (docs/runs.md).
 */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'] as const;

/** Values from command-line flags (commander gives strings for options with arguments). */
export interface ConfigFlags {
  port?: string | number;
  host?: string;
  metricsPort?: string | number;
  baseUrl?: string;
  dataDir?: string;
  /** `--database URL`: a PostgreSQL URL; default the SQLite file in the data dir. */
  database?: string;
  trustProxy?: boolean | string;
  maxConcurrentRuns?: string | number;
  /** `--max-connections N`. */
  maxConnections?: string | number;
  logLevel?: string;
  /** A kind, or false from commander's --no-executor. */
  executor?: string | false;
  /** `--lease-seconds N`. */
  leaseSeconds?: string | number;
  workDir?: string;
  runUid?: string | number;
  /** Repeatable flag: commander collects the values. */
  sandboxRoBind?: string[];
  sandboxMemoryMb?: string | number;
  sandboxDiskMb?: string | number;
  sandboxMaxProcesses?: string | number;
  sandboxMaxOpenFiles?: string | number;
  /** Repeatable `--notify-allow HOST[:PORT]`. */
  notifyAllow?: string[];
  /** `--notify-retry-delays 10s,30s,1m`: the waits between attempts. */
  notifyRetryDelays?: string;
  /** `--repository-base URL|DIR`: where Warp repositories are cloned from. */
  repositoryBase?: string;
  /** Repeatable `--local-repos DIR`: where repos given as local paths may lie. */
  localRepos?: string[];
  /** For tests: how long one notification attempt may take (default 10 s). */
  notifyTimeoutMs?: number;
  /** Overrides for tests and benchmarks; the environment still wins for nothing here. */
  limits?: Partial<Limits>;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  ingressBodyBytes: 262_144,
  deliveriesPerMinute: 60,
  failedAuthPerMinute: 20,
  webhooksPerFactory: 20,
  deliveryLogKeep: 50,
  deliveryLogDays: 7,
  identityDays: 30,
  rejectedLogKeep: 1_000,
  signatureToleranceSeconds: 300,
  runListDefault: 20,
  runListMax: 100,
  workspaceRetentionHours: 24,
  apiBodyBytes: 1_048_576,
  definitionsBodyBytes: 33_554_432,
  runCreateBodyBytes: 16_777_216,
});

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Parses flags with environment fallbacks into a deep-frozen Config (docs/runtime.md).
 * Pure: the caller passes `process.env` and the working directory; this is the only place the
 * runtime reads its environment variables. Flags win over the environment.
 * Throws a usage CliError naming the flag or variable for an invalid value.
 */
export function parseConfig(
  flags: ConfigFlags,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
  facts: HostFacts = { platform: process.platform, uid: process.getuid?.() },
): Config {
  const pick = (flag: unknown, name: string): { value: string; source: string } | undefined => {
    if (flag !== undefined && flag !== null && flag !== '') return { value: String(flag), source: `--${kebab(name)}` };
    const envName = ENV_NAMES[name];
    const v = envName ? env[envName] : undefined;
    if (v !== undefined && v !== '') return { value: v, source: envName! };
    return undefined;
  };
  /** A repeatable flag's values, else the variable's entries split on `separator` (those `keep` keeps). */
  const pickList = (flag: string[] | undefined, name: string, envName: string, separator: string, keep: (v: string) => unknown) =>
    flag?.length
      ? flag.map((value) => ({ value, source: `--${kebab(name)}` }))
      : (env[envName] ?? '').split(separator).filter(keep).map((value) => ({ value, source: envName }));

  const port = int(pick(flags.port, 'port'), 8080, 0, 65535);
  const host = pick(flags.host, 'host')?.value ?? '127.0.0.1';
  const metricsRaw = pick(flags.metricsPort, 'metricsPort');
  const metricsPort = metricsRaw ? int(metricsRaw, 0, 0, 65535) : undefined;
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port) {
    throw usageError(`${metricsRaw!.source} must differ from the port webhooks are served on (${port}), so /metrics stays off the public port.`);
  }
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  const baseUrlRaw = pick(flags.baseUrl, 'baseUrl');
  const baseUrl = baseUrlRaw ? parseBaseUrl(baseUrlRaw) : `http://${hostInUrl}:${port}`;
  const dataDirRaw = pick(flags.dataDir, 'dataDir')?.value ?? './.factory';
  const dataDir = isAbsolute(dataDirRaw) ? resolve(dataDirRaw) : resolve(cwd, dataDirRaw);

  let masterKey: Buffer | undefined;
  const mk = env.FACTORY_MASTER_KEY;
  if (mk !== undefined && mk !== '') {
    const bytes = Buffer.from(mk.trim(), 'base64');
    // Buffer.from ignores junk, so also check the text round-trips to the same bytes.
    if (bytes.length !== 32 || !/^[A-Za-z0-9+/]{43}=?$/.test(mk.trim())) {
      throw usageError('FACTORY_MASTER_KEY must be the base64 encoding of exactly 32 bytes (e.g. `openssl rand -base64 32`).');
    }
    masterKey = bytes;
  }

  const database = parseDatabase(pick(flags.database, 'database'), masterKey !== undefined);

  const trustProxy = bool(flags.trustProxy === true ? { value: 'true', source: '--trust-proxy' } : pick(flags.trustProxy, 'trustProxy'), false);
  const maxConcurrentRuns = int(pick(flags.maxConcurrentRuns, 'maxConcurrentRuns'), 2, 1, 1000);
  const level = pick(flags.logLevel, 'logLevel');
  if (level && !LOG_LEVELS.includes(level.value as LogLevel)) {
    throw usageError(`${level.source} must be one of ${LOG_LEVELS.join(', ')}, got "${level.value}".`);
  }
  const logLevel = (level?.value ?? 'info') as LogLevel;

  const limits: Limits = { ...DEFAULT_LIMITS, ...(flags.limits ?? {}) };
  const envLimit = (name: string, key: keyof Limits) => {
    const v = env[name];
    if (v !== undefined && v !== '') limits[key] = int({ value: v, source: name }, limits[key], 1, 1_000_000_000);
  };
  envLimit('FACTORY_RATE_DELIVERIES_PER_MINUTE', 'deliveriesPerMinute');
  envLimit('FACTORY_RATE_FAILED_AUTH_PER_MINUTE', 'failedAuthPerMinute');
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1) throw usageError(`limit ${key} must be a positive integer, got ${String(value)}.`);
  }

  const inheritedEnv: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const v = env[name];
    if (v !== undefined) inheritedEnv[name] = v;
  }

  const executeRuns = flags.executor !== false && !bool(pick(undefined, 'noExecutor'), false);
  const leaseSeconds = int(pick(flags.leaseSeconds, 'leaseSeconds'), 30, 3, 3600);
  const maxConnectionsRaw = pick(flags.maxConnections, 'maxConnections');
  const maxConnections = maxConnectionsRaw ? int(maxConnectionsRaw, 0, 8, 1_000_000) : undefined;
  const executorRaw = pick(flags.executor === false ? undefined : flags.executor, 'executor');
  if (executorRaw && executorRaw.value !== 'sandbox' && executorRaw.value !== 'direct') {
    throw usageError(`${executorRaw.source} must be sandbox or direct, got "${executorRaw.value}".`);
  }
  // bubblewrap is Linux-only; elsewhere the default is what can run at all, and `serve` says so.
  const executor = (executorRaw?.value ?? (facts.platform === 'linux' ? 'sandbox' : 'direct')) as ExecutorKind;

  const workDirRaw = pick(flags.workDir, 'workDir');
  const workDir = workDirRaw ? resolve(cwd, workDirRaw.value) : `${dataDir}-workspaces`;
  if (isWithin(workDir, dataDir) || isWithin(dataDir, workDir)) {
    throw usageError(`${workDirRaw?.source ?? '--work-dir'} must lie outside the data dir ${dataDir} (and not hold it), so a run never sits next to the keys, got "${workDir}".`);
  }

  const runUidRaw = pick(flags.runUid, 'runUid');
  let runAs: { uid: number; gid: number } | undefined;
  if (facts.uid === 0) {
    const m = /^(\d{1,10})(?::(\d{1,10}))?$/.exec(runUidRaw?.value.trim() ?? '65534');
    const uid = m ? Number(m[1]) : NaN;
    const gid = m ? Number(m[2] ?? m[1]) : NaN;
    if (!(uid > 0 && uid < 4294967295 && gid > 0 && gid < 4294967295)) {
      throw usageError(`${runUidRaw?.source ?? '--run-uid'} must be UID or UID:GID, numbers other than 0, got "${runUidRaw?.value}".`);
    }
    runAs = { uid, gid };
  } else if (runUidRaw) {
    throw usageError(`${runUidRaw.source} needs the runtime to run as root (only root can run commands as another user); leave it unset.`);
  }

  const roBinds: string[] = [];
  for (const b of pickList(flags.sandboxRoBind, 'sandboxRoBind', 'FACTORY_SANDBOX_RO_BIND', ':', Boolean)) {
    const dir = resolve(cwd, b.value);
    if (dir === '/' || isWithin(dir, dataDir) || isWithin(dir, workDir)) {
      throw usageError(`${b.source} must name a directory outside the data dir and the work dir (and not /), got "${b.value}".`);
    }
    roBinds.push(dir);
  }
  const sandbox: SandboxSettings = {
    bwrap: env.FACTORY_BWRAP || 'bwrap',
    roBinds,
    memoryMb: int(pick(flags.sandboxMemoryMb, 'sandboxMemoryMb'), 4096, 64, 1_048_576),
    maxProcesses: int(pick(flags.sandboxMaxProcesses, 'sandboxMaxProcesses'), 4096, 16, 4_194_304),
    maxOpenFiles: int(pick(flags.sandboxMaxOpenFiles, 'sandboxMaxOpenFiles'), 8192, 64, 1_048_576),
    diskMb: int(pick(flags.sandboxDiskMb, 'sandboxDiskMb'), DEFAULT_DISK_MB, 0, 1_073_741_824),
  };

  const allow = pickList(flags.notifyAllow, 'notifyAllow', 'FACTORY_NOTIFY_ALLOW', ',', (v: string) => v.trim()).map((a) => {
    const entry = parseAllowEntry(a.value);
    if (!entry) throw usageError(`${a.source} must be HOST or HOST:PORT (e.g. hooks.example.com or 10.0.0.5:8443), got "${a.value}".`);
    return entry;
  });
  const delaysRaw = pick(flags.notifyRetryDelays, 'notifyRetryDelays');
  let retryDelaysMs = DEFAULT_NOTIFY_RETRY_DELAYS_MS;
  if (delaysRaw) {
    const parts = delaysRaw.value.split(',').map((p) => parseDelay(p));
    if (parts.length > 20 || parts.some((p) => p === undefined || p > 86_400_000)) {
      throw usageError(`${delaysRaw.source} must be up to 20 comma-separated waits such as 10s,30s,1m (ms, s or m; at most a day each), got "${delaysRaw.value}".`);
    }
    retryDelaysMs = parts as number[];
  }
  const notify: NotifySettings = { allow: allow.length ? allow : null, retryDelaysMs, timeoutMs: flags.notifyTimeoutMs ?? 10_000 };

  const repositoryBase = parseRepositoryBase(pick(flags.repositoryBase, 'repositoryBase'), cwd);
  const localRepos: string[] = [];
  // The data dir and the work dir stay out of reach inside any of them (workspace.ts planRepo).
  for (const r of pickList(flags.localRepos, 'localRepos', 'FACTORY_LOCAL_REPOS', ':', Boolean)) localRepos.push(resolve(cwd, r.value));
  const localReposChosen = localRepos.length > 0;
  // A directory of mirrors for Warp's repositories is local by the operator's own choice.
  if (repositoryBase.startsWith('/')) localRepos.push(repositoryBase);

  return deepFreeze({
    port, host, metricsPort, baseUrl, dataDir, database, masterKey, trustProxy, maxConcurrentRuns, maxConnections, executeRuns, leaseSeconds, logLevel, limits, inheritedEnv,
    executor, executorChosen: executorRaw !== undefined, workDir, runAs, sandbox, notify, repositoryBase, localRepos, localReposChosen,
  });
}

/** The same config with the direct executor: `factory dev` carries on without bubblewrap. */
export function withDirectExecutor(config: Config): Config {
  return deepFreeze({ ...config, executor: 'direct' as const, directAnnounced: true });
}

/** `dev` without `--local-repos`: a repo may be any local directory the run's user can read (docs/security.md#local-repositories). */
export function withAnyLocalRepos(config: Config): Config {
  return deepFreeze({ ...config, localRepos: null });
}

/** Is `p` the directory `dir` or inside it? Both absolute. */
export function isWithin(p: string, dir: string): boolean {
  const r = relative(dir, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}

const ENV_NAMES: Record<string, string> = {
  port: 'FACTORY_PORT',
  host: 'FACTORY_HOST',
  metricsPort: 'FACTORY_METRICS_PORT',
  baseUrl: 'FACTORY_BASE_URL',
  dataDir: 'FACTORY_DATA_DIR',
  database: 'FACTORY_DATABASE_URL',
  trustProxy: 'FACTORY_TRUST_PROXY',
  maxConcurrentRuns: 'FACTORY_MAX_CONCURRENT_RUNS',
  maxConnections: 'FACTORY_MAX_CONNECTIONS',
  logLevel: 'FACTORY_LOG_LEVEL',
  executor: 'FACTORY_EXECUTOR',
  noExecutor: 'FACTORY_NO_EXECUTOR',
  leaseSeconds: 'FACTORY_LEASE_SECONDS',
  workDir: 'FACTORY_WORK_DIR',
  runUid: 'FACTORY_RUN_UID',
  sandboxMemoryMb: 'FACTORY_SANDBOX_MEMORY_MB',
  sandboxDiskMb: 'FACTORY_SANDBOX_DISK_MB',
  sandboxMaxProcesses: 'FACTORY_SANDBOX_MAX_PROCESSES',
  sandboxMaxOpenFiles: 'FACTORY_SANDBOX_MAX_OPEN_FILES',
  notifyRetryDelays: 'FACTORY_NOTIFY_RETRY_DELAYS',
  repositoryBase: 'FACTORY_REPOSITORY_BASE',
};

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());

function int(v: { value: string; source: string } | undefined, fallback: number, min: number, max: number): number {
  if (!v) return fallback;
  const n = /^\d+$/.test(v.value.trim()) ? Number(v.value.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw usageError(`${v.source} must be an integer from ${min} to ${max}, got "${v.value}".`);
  }
  return n;
}

function bool(v: { value: string; source: string } | undefined, fallback: boolean): boolean {
  if (!v) return fallback;
  const s = v.value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  throw usageError(`${v.source} must be true or false, got "${v.value}".`);
}

/**
 * A URL git can clone from (https, http, ssh, git, file), or a directory, made absolute: a Warp
 * repository `owner/repo` is cloned from `<base>/owner/repo` (docs/definitions.md#warp-agents-run-here).
 */
function parseRepositoryBase(v: { value: string; source: string } | undefined, cwd: string): string {
  if (!v) return 'https://github.com';
  const raw = v.value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    let url: URL | undefined;
    try {
      url = new URL(raw);
    } catch {
      url = undefined;
    }
    // A password would be shown in every clone command of a transcript.
    if (!url || !['https:', 'http:', 'ssh:', 'git:', 'file:'].includes(url.protocol) || url.search || url.hash || url.password) {
      throw usageError(`${v.source} must be a URL git can clone from (https, http, ssh, git or file, without password, query or fragment) or a directory, got "${v.source === 'FACTORY_REPOSITORY_BASE' ? 'its value' : v.value}".`);
    }
    return raw.replace(/\/+$/, '');
  }
  return resolve(cwd, raw);
}

/**
 * `--database` / FACTORY_DATABASE_URL (docs/deploy.md#the-database): a `postgres://` or
 * `postgresql://` URL. Every replica decrypts the same team secrets, so PostgreSQL needs the master
 * key from FACTORY_MASTER_KEY: a key generated into one replica's data dir would leave the others
 * unable to read what it sealed. Messages show the URL without its password.
 */
function parseDatabase(v: { value: string; source: string } | undefined, hasMasterKey: boolean): DatabaseSettings {
  if (!v) return { engine: 'sqlite' };
  const database = parseDatabaseUrl(v);
  if (!hasMasterKey) {
    throw usageError(`FACTORY_MASTER_KEY is required with ${v.source}: every replica must decrypt the same team secrets (\`openssl rand -base64 32\`, the same value on each replica).`);
  }
  return database;
}

/** A PostgreSQL URL from `--database` or FACTORY_DATABASE_URL, checked; `factory migrate` needs no master key. */
export function parseDatabaseUrl(v: { value: string; source: string }): DatabaseSettings & { engine: 'postgres' } {
  let url: URL | undefined;
  try {
    url = new URL(v.value.trim());
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') || !url.hostname && !url.searchParams.get('host')) {
    throw usageError(`${v.source} must be a PostgreSQL URL such as postgres://user@host:5432/factory, got "${redactPassword(v.value.trim())}".`);
  }
  return { engine: 'postgres', url: v.value.trim(), display: redactPassword(v.value.trim()) };
}

/** A URL with any password replaced by `***`; text that is no URL is returned unchanged. */
export function redactPassword(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.href;
  } catch {
    return raw.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
  }
}

function parseBaseUrl(v: { value: string; source: string }): string {
  let url: URL;
  try {
    url = new URL(v.value);
  } catch {
    throw usageError(`${v.source} must be an absolute http(s) URL, got "${v.value}".`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash || url.username) {
    throw usageError(`${v.source} must be an http(s) URL without query, fragment or credentials, got "${v.value}".`);
  }
  return url.href.replace(/\/+$/, '');
}

/** Freezes plain objects and arrays recursively; Buffers cannot be frozen and are left as they are. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
