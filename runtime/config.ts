import { isAbsolute, resolve } from 'node:path';
import { usageError } from '../core/errors.ts';

/** SPEC 11 limits, plus the runtime's own caps. Every value is a positive integer. */
export interface Limits {
  /** Ingress body cap in bytes (SPEC 7.1 step 5). */
  ingressBodyBytes: number;
  /** Deliveries per minute per webhook and sender address (SPEC 7.5). */
  deliveriesPerMinute: number;
  /** Failed authentications per minute per webhook and sender address (SPEC 7.5). */
  failedAuthPerMinute: number;
  webhooksPerFactory: number;
  /** Delivery log: newest N per webhook are always kept ... */
  deliveryLogKeep: number;
  /** ... and everything from the last N days (SPEC 7.7). */
  deliveryLogDays: number;
  /** Accepted delivery identities are remembered this many days (SPEC 7.4). */
  identityDays: number;
  /** Signature age tolerance, both directions (SPEC 7.3). */
  signatureToleranceSeconds: number;
  runListDefault: number;
  runListMax: number;
  /** Workspaces of finished runs are removed after this many hours (SPEC 9). */
  workspaceRetentionHours: number;
  /** Cap on management and run API JSON bodies (not the ingress). */
  apiBodyBytes: number;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** No trailing slash. Ingress URLs and session links are built from it. */
  readonly baseUrl: string;
  /** Absolute path. */
  readonly dataDir: string;
  /** 32 bytes from FACTORY_MASTER_KEY, or undefined: loaded or generated at start (runtime/crypto.ts). */
  readonly masterKey: Buffer | undefined;
  /** Read the client address from X-Forwarded-For (SPEC 5). */
  readonly trustProxy: boolean;
  readonly maxConcurrentRuns: number;
  readonly logLevel: LogLevel;
  readonly limits: Readonly<Limits>;
  /**
   * The runtime's variables that agents and setup commands inherit (SPEC 9, "a minimal inherited
   * environment"): only INHERITED_ENV, taken once from the environment parseConfig was given.
   */
  readonly inheritedEnv: Readonly<Record<string, string>>;
}

/**
 * Variables a run's processes inherit from the runtime; nothing else, so no FACTORY_* value (the
 * master key, API keys) and no provider key of the runtime's own reaches an agent (SPEC 9).
 */
export const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'] as const;

/** Values from command-line flags (commander gives strings for options with arguments). */
export interface ConfigFlags {
  port?: string | number;
  host?: string;
  baseUrl?: string;
  dataDir?: string;
  trustProxy?: boolean | string;
  maxConcurrentRuns?: string | number;
  logLevel?: string;
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
  signatureToleranceSeconds: 300,
  runListDefault: 20,
  runListMax: 100,
  workspaceRetentionHours: 24,
  apiBodyBytes: 1_048_576,
});

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Parses flags with environment fallbacks into a deep-frozen Config (SPEC 5, STYLE 4).
 * Pure: the caller passes `process.env` and the working directory; this is the only place the
 * runtime reads its environment variables. Flags win over the environment.
 * Throws a usage CliError naming the flag or variable for an invalid value.
 */
export function parseConfig(
  flags: ConfigFlags,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
): Config {
  const pick = (flag: unknown, name: string): { value: string; source: string } | undefined => {
    if (flag !== undefined && flag !== null && flag !== '') return { value: String(flag), source: `--${kebab(name)}` };
    const envName = ENV_NAMES[name];
    const v = envName ? env[envName] : undefined;
    if (v !== undefined && v !== '') return { value: v, source: envName! };
    return undefined;
  };

  const port = int(pick(flags.port, 'port'), 8080, 0, 65535);
  const host = pick(flags.host, 'host')?.value ?? '127.0.0.1';
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

  return deepFreeze({ port, host, baseUrl, dataDir, masterKey, trustProxy, maxConcurrentRuns, logLevel, limits, inheritedEnv });
}

const ENV_NAMES: Record<string, string> = {
  port: 'FACTORY_PORT',
  host: 'FACTORY_HOST',
  baseUrl: 'FACTORY_BASE_URL',
  dataDir: 'FACTORY_DATA_DIR',
  trustProxy: 'FACTORY_TRUST_PROXY',
  maxConcurrentRuns: 'FACTORY_MAX_CONCURRENT_RUNS',
  logLevel: 'FACTORY_LOG_LEVEL',
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
