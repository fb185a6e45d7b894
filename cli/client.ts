import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Command } from 'commander';
import { CliError, ERROR_CODES, FactoryError, usageError, type ErrorCode, type FieldError } from '../core/errors.ts';
import { fsReason, type CliIO } from './io.ts';
import { readRuntimeFile } from '../runtime/runtime-file.ts';
import { answerShape, shapeProblem } from './answers.ts';

export const DEFAULT_SERVER = 'http://127.0.0.1:8080';

/** Plan and apply take gzip bodies; every other route takes uncompressed ones only. */
const DEFINITIONS_ROUTE = /^\/api\/v1\/factories\/[^/]+\/(plan|apply)$/;

/**
 * The runtime's cap on a request body (docs/api.md; plan and apply have their own, for gzip). A
 * body over it is refused here in words: the runtime answers 413 and closes the connection while
 * the client is still sending, which fetch reports as a connection error. Kept equal to the
 * runtime's limit by test/cli/client.test.ts.
 */
export const API_BODY_BYTES = 1_048_576;
/** The run creation route's own cap (its images travel inside it as base64); equal to the runtime's, as above. */
export const RUN_CREATE_BODY_BYTES = 16_777_216;
const RUN_CREATE_ROUTE = /^\/api\/v1\/agent\/runs?$/;
const gzipAsync = promisify(gzip);

/** The options every online command shares (docs/runtime.md): where the runtime is and which key to use. */
export interface ClientFlags {
  server?: string;
  apiKey?: string;
  dataDir?: string;
}

export interface ClientResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  /** The body as received, for output that must not re-serialise it (a payload nested too deep). */
  text: string;
}

export interface Client {
  /** The runtime's base URL, without a trailing slash. */
  readonly server: string;
  /**
   * Sends a request and returns the parsed JSON body (undefined for an empty body).
   * A problem+json (or any non-2xx) answer throws FactoryError(code, detail, {errors}).
   */
  request<T = unknown>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** Like request, but also gives the status and headers (e.g. 200 vs 201, Location). */
  send<T = unknown>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ClientResponse<T>>;
}

/** A repeatable option's parser: each occurrence adds its value to the list (undefined until given, without a default). */
export const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * An id or name argument's parser: an empty one (`"$ID"` of an unset variable) is a usage error
 * (README.md#commands). In a URL it would leave `/runs/` or `/deliveries/`, the list route, and
 * the command would print a list, or nothing of use, with exit status 0.
 */
export const nonEmpty = (what: string) => (value: string): string => {
  if (value === '') throw usageError(`the ${what} given is empty; pass a ${what} (an unset shell variable gives an empty one).`);
  return value;
};

/**
 * Adds `--server`, `--api-key` and `--data-dir` to a command, so every online command finds the
 * runtime and the key the same way. Read them back with `clientFromFlags(cmd.opts(), io)`.
 */
export function addClientOptions(cmd: Command): Command {
  return cmd
    .option('--server <url>', `the runtime's URL (env FACTORY_SERVER; default: the running runtime found in a data dir, else ${DEFAULT_SERVER})`)
    .option('--api-key <key>', 'API key (env FACTORY_API_KEY, recommended; default: the admin.key of the data dir found)')
    .option('--data-dir <dir>', 'the runtime data dir to use (env FACTORY_DATA_DIR; default: searched, see docs/runtime.md#cli-connection)');
}

/** Where the CLI found the runtime and the key, for messages (docs/runtime.md#cli-connection). */
export interface ClientOrigin {
  /** `--server`, `FACTORY_SERVER`, a runtime.json path, or `the default`. */
  server: string;
  /** `--api-key`, `FACTORY_API_KEY` or an admin.key path. */
  key: string;
  /** The data dirs searched, in words, when the CLI searched; for "not found" messages. */
  searched?: string;
  /** An admin.key that was found but not used because a key was given: a hint for scope errors. */
  unusedAdminKey?: string;
}

export interface ResolvedClient {
  server: string;
  apiKey: string;
  origin: ClientOrigin;
  /** How long one request may take, headers and body, before the CLI gives up (FACTORY_TIMEOUT). */
  timeoutMs: number;
}

/** One request's limit when FACTORY_TIMEOUT is not set: far above any answer of a healthy runtime (docs/runtime.md#cli-connection). */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** FACTORY_TIMEOUT in seconds (a decimal number above 0), as milliseconds; the default without it. */
export function requestTimeout(env: Record<string, string | undefined>): number {
  const raw = env.FACTORY_TIMEOUT;
  if (raw === undefined || raw.trim() === '') return DEFAULT_TIMEOUT_MS;
  const seconds = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
  if (!(seconds > 0) || seconds * 1000 > 2_147_483_647) {
    throw new CliError(`FACTORY_TIMEOUT must be a number of seconds above 0 (at most 2147483), got "${raw}".`, 2);
  }
  return Math.max(1, Math.round(seconds * 1000));
}

/** One data dir the CLI looked at: its live runtime (if any) and its admin key file (if any). */
interface DataDirFinding {
  dir: string;
  runtime?: { url: string; file: string; pid: number };
  adminKey?: string;
}

/**
 * The data dirs the CLI searches when none is given, in order: `<dir>/.factory` of the factory
 * repo the command is pointed at (`factory dev DIR` keeps its data there), `./.factory`, then
 * `.factory` in each parent directory up to the git root, of the repo dir and of the working
 * directory. Without a git root above, no parent is searched.
 */
export function dataDirCandidates(cwd: string, dir?: string): string[] {
  const starts = dir === undefined ? [cwd] : [resolve(cwd, dir), cwd];
  const out: string[] = starts.map((d) => join(d, '.factory'));
  for (const start of starts) for (const parent of parentsToGitRoot(start)) out.push(join(parent, '.factory'));
  return [...new Set(out)];
}

/** The parents of `start` up to and including the nearest directory holding `.git`; none without one. */
function parentsToGitRoot(start: string): string[] {
  const parents: string[] = [];
  for (let d = start; ; ) {
    if (existsSync(join(d, '.git'))) return parents;
    const up = dirname(d);
    if (up === d) return [];
    parents.push(up);
    d = up;
  }
}

/** True while process `pid` exists (a runtime killed without a clean stop leaves its file behind). */
function alive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function inspect(dir: string): DataDirFinding {
  const finding: DataDirFinding = { dir };
  // Missing or unreadable: no running runtime recorded here.
  const r = readRuntimeFile(dir);
  if (r && alive(r.pid)) finding.runtime = { url: r.url.replace(/\/+$/, ''), file: r.path, pid: r.pid };
  const key = join(dir, 'admin.key');
  if (existsSync(key)) finding.adminKey = key;
  return finding;
}

/**
 * Resolves the server and the key (docs/runtime.md#cli-connection). The server: `--server`, then
 * FACTORY_SERVER, then the running runtime of a data dir, then the default. The key: `--api-key`,
 * then FACTORY_API_KEY, then the data dir's `admin.key` (sent only to that data dir's running
 * runtime or to a server given). The data dir: `--data-dir`, then FACTORY_DATA_DIR, else the
 * first of `dataDirCandidates` with a running runtime (the one at the given server, when a server
 * was given), else the first with an admin.key. Each value carries
 * where it came from, so an error can say it. No key anywhere is a CliError that says how to pass one.
 */
export function resolveClientFlags(flags: ClientFlags, io: CliIO, where: { dir?: string } = {}): ResolvedClient {
  const explicitServer = flags.server ? { url: flags.server, from: '--server' } : io.env.FACTORY_SERVER ? { url: io.env.FACTORY_SERVER, from: 'FACTORY_SERVER' } : undefined;
  if (explicitServer) explicitServer.url = checkServer(explicitServer.url, explicitServer.from);
  const timeoutMs = requestTimeout(io.env);
  const explicitKey = flags.apiKey ? { key: flags.apiKey, from: '--api-key' } : io.env.FACTORY_API_KEY ? { key: io.env.FACTORY_API_KEY, from: 'FACTORY_API_KEY' } : undefined;

  const givenDir = flags.dataDir || io.env.FACTORY_DATA_DIR;
  const searched = givenDir ? [isAbsolute(givenDir) ? givenDir : resolve(io.cwd, givenDir)] : dataDirCandidates(io.cwd, where.dir);
  const findings = searched.map(inspect);
  const running = findings.filter((f) => f.runtime && (!explicitServer || f.runtime.url === explicitServer.url));
  // A key is never taken from a data dir whose running runtime is a different server than the one given.
  const keyed = findings.filter((f) => f.adminKey && !(explicitServer && f.runtime && f.runtime.url !== explicitServer.url));
  const chosen = running.find((f) => f.adminKey) ?? running[0] ?? keyed[0];

  const server = explicitServer ?? (chosen?.runtime ? { url: chosen.runtime.url, from: chosen.runtime.file } : { url: DEFAULT_SERVER, from: 'the default' });
  const origin: ClientOrigin = { server: server.from, key: '', searched: givenDir ? undefined : places(searched, io.cwd) };
  if (explicitKey) {
    origin.key = explicitKey.from;
    if (chosen?.adminKey) origin.unusedAdminKey = chosen.adminKey;
    return { server: server.url, apiKey: explicitKey.key.trim(), origin, timeoutMs };
  }
  const keyFile = chosen?.adminKey ?? (givenDir ? join(searched[0], 'admin.key') : undefined);
  let text: string | undefined;
  if (keyFile) {
    try {
      text = readFileSync(keyFile, 'utf8');
    } catch (err) {
      if (givenDir) throw new CliError(`no API key: cannot read ${keyFile} (${fsReason(err)}); set FACTORY_API_KEY or pass --api-key.`);
    }
  }
  if (text === undefined) {
    const other = findings.find((f) => f.adminKey && f.runtime && explicitServer && f.runtime.url !== explicitServer.url);
    if (other) {
      throw new CliError(
        `no API key for ${explicitServer!.url} (from ${explicitServer!.from}): ${other.adminKey} belongs to the runtime at ${other.runtime!.url}; set FACTORY_API_KEY or pass --api-key.`,
      );
    }
    throw new CliError(`no API key: set FACTORY_API_KEY or pass --api-key, or run next to a runtime's data dir (looked for admin.key in ${places(searched, io.cwd)}).`);
  }
  origin.key = keyFile!;
  if (text.trim() === '') throw new CliError(`no API key: ${keyFile} is empty; set FACTORY_API_KEY or pass --api-key, or restore the key the runtime wrote there.`);
  // A data dir's admin key goes only to the runtime its runtime.json names, never to a guessed
  // default URL where another program may listen (docs/runtime.md#cli-connection).
  if (!explicitServer && !chosen?.runtime) {
    throw new CliError(
      `the runtime of ${places([dirname(keyFile!)], io.cwd)}, whose admin key was found, is not running (no runtime.json there names a running process); start it with \`factory dev\` or \`factory serve\`, or pass --server.`,
    );
  }
  return { server: server.url, apiKey: text.trim(), origin, timeoutMs };
}

function checkServer(raw: string, from: string): string {
  const server = raw.replace(/\/+$/, '');
  try {
    const u = new URL(server);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    // A user name or password in the URL would be printed with every message that names the
    // runtime; the API key is the one credential, and it has its own variable.
    if (u.username || u.password) {
      throw new CliError(`${from} must not carry a user name or password; give the API key with FACTORY_API_KEY or --api-key.`, 2);
    }
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`${from} must be an http(s) URL, got "${server}".`, 2);
  }
  return server;
}

/** A short list of searched dirs, relative to the working directory where that is shorter. */
function places(dirs: string[], cwd: string): string {
  const shown = dirs.map((d) => {
    const r = relative(cwd, d);
    return r && !r.startsWith('..') && r.length < d.length ? `./${r}` : d;
  });
  return shown.length <= 3 ? shown.join(', ') : `${shown.slice(0, 3).join(', ')} and ${shown.length - 3} more up to the git root`;
}

/** The client for a command's flags (see addClientOptions); `dir` is the factory repo, for commands that take one. */
export function clientFromFlags(flags: ClientFlags, io: CliIO, where: { dir?: string } = {}): Client {
  return createClient(resolveClientFlags(flags, io, where));
}

/**
 * The last JSON answer a client of this process accepted. A command that then fails on it with a
 * TypeError (an array or a field missing) was talking to a server that is not a runtime of this
 * version, and `runCli` says so instead of printing the bare JavaScript error.
 */
let lastAnswer: { server: string; method: string; path: string } | undefined;

/** The last accepted answer since the previous call, which forgets it. */
export function takeLastAnswer(): typeof lastAnswer {
  const answer = lastAnswer;
  lastAnswer = undefined;
  return answer;
}

/** An HTTP client for the management and run APIs. */
export function createClient(options: { server: string; apiKey: string; origin?: ClientOrigin; timeoutMs?: number }): Client {
  const server = options.server.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const origin = options.origin;
  // Checked here, where it would otherwise fail inside fetch and read as an unreachable runtime.
  if (!/^[\x21-\x7e]*$/.test(options.apiKey)) {
    throw new CliError(`the API key${origin ? ` (from ${origin.key})` : ''} has characters an HTTP header cannot carry; a factory API key is printable ASCII without spaces.`);
  }
  const send = async <T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ClientResponse<T>> => {
    const h: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${options.apiKey}`, ...headers };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let payload: string | Buffer | undefined = body === undefined ? undefined : JSON.stringify(body);
    const definitions = DEFINITIONS_ROUTE.test(path);
    const cap = method === 'POST' && RUN_CREATE_ROUTE.test(path) ? RUN_CREATE_BODY_BYTES : API_BODY_BYTES;
    if (payload !== undefined && !definitions && Buffer.byteLength(payload) > cap) {
      throw new CliError(`the request is ${Buffer.byteLength(payload)} bytes of JSON, more than the ${cap} bytes the runtime takes (docs/api.md).`);
    }
    if (payload !== undefined && definitions) {
      // A snapshot of thousands of automations is megabytes of repetitive JSON (docs/plan-apply.md#large-factories).
      payload = await gzipAsync(payload);
      h['Content-Encoding'] = 'gzip';
    }
    // One limit for the whole exchange: a runtime that accepts the connection and then never
    // answers (stopped in a debugger, its disk hung) would otherwise hold the command for minutes.
    const signal = AbortSignal.timeout(timeoutMs);
    const route = routeOf(path);
    const slow = () => new CliError(`the runtime at ${server} did not answer ${method} ${route} within ${timeoutMs / 1000} s; FACTORY_TIMEOUT sets this limit in seconds.`);
    let res: Response;
    let text: string;
    try {
      res = await fetch(server + path, { method, headers: h, body: payload, signal });
    } catch {
      throw signal.aborted ? slow() : new CliError(unreachable(server, origin));
    }
    try {
      text = await res.text();
    } catch {
      throw signal.aborted ? slow() : new CliError(`the connection to the runtime at ${server} broke while it answered ${method} ${route}; try again.`);
    }
    const type = res.headers.get('content-type') ?? '';
    let parsed: unknown;
    if (text && /json/.test(type)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!res.ok) throw toError(res, parsed, text, server, origin);
    const answer = { status: res.status, headers: res.headers, body: parsed as T, text };
    if (res.status !== 204) checkAnswer(server, method, route, answer);
    lastAnswer = { server, method, path: route };
    return answer;
  };
  return {
    server,
    send,
    request: async <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => (await send<T>(method, path, body, headers)).body,
  };
}

/**
 * Every JSON route of the runtime answers a JSON object, and each route the CLI reads has the
 * fields its commands use (cli/answers.ts): anything else comes from another server, or from a
 * runtime of another version, and is said in one sentence before a command prints anything.
 */
function checkAnswer(server: string, method: string, route: string, res: ClientResponse): void {
  if (res.body === null || typeof res.body !== 'object' || Array.isArray(res.body)) {
    throw new CliError(`the server at ${server} did not answer as a factory runtime (${method} ${route} gave ${res.status} with ${describeBody(res)}); check --server or FACTORY_SERVER.`);
  }
  const shape = answerShape(method, route);
  const problem = shape && shapeProblem(res.body, shape);
  if (problem) throw new CliError(cannotRead(server, method, route, problem));
}

/** The sentence for an answer of another shape; `runCli` says the same of an answer a command then fails to read. */
export function cannotRead(server: string, method: string, route: string, problem: string): string {
  return `the server at ${server} answered ${method} ${route} with JSON this CLI cannot read (${problem}); check --server or FACTORY_SERVER, and that the runtime runs the same version as this CLI.`;
}

/** A request path without its query, as messages name it. */
const routeOf = (path: string) => path.split('?')[0];

/** What a response that is not a JSON object held, in a few words. */
function describeBody(res: { headers: Headers; text: string }): string {
  const type = res.headers.get('content-type')?.split(';')[0].trim();
  if (!res.text) return 'an empty body';
  return type ? `a body of type ${type}` : 'a body without a content type';
}

/** Where the server came from, in words: `(from FACTORY_SERVER)`, `(from /x/.factory/runtime.json)`, `(the default)`. */
function serverFrom(origin: ClientOrigin): string {
  return origin.server === 'the default' ? 'the default' : `from ${origin.server}`;
}

function unreachable(server: string, origin: ClientOrigin | undefined): string {
  if (!origin) return `cannot reach the runtime at ${server}: is \`factory serve\` running?`;
  if (origin.server === 'the default') {
    const where = origin.searched ? ` (the default: no running runtime found in ${origin.searched})` : ' (the default)';
    return `cannot reach the runtime at ${server}${where}: start \`factory dev\` or \`factory serve\`, or pass --server.`;
  }
  return `cannot reach the runtime at ${server} (${serverFrom(origin)}): is it still running?`;
}

/**
 * An authentication or scope refusal says which key was sent where, and where each came from:
 * a key left in FACTORY_API_KEY from an earlier step is the usual cause, so say so when the data
 * dir's admin key was there to be used instead.
 */
function withOrigin(detail: string, status: number, server: string, origin: ClientOrigin | undefined): string {
  if (!origin || (status !== 401 && status !== 403)) return detail;
  const base = `${detail.replace(/\.$/, '')} (the key from ${origin.key}; the runtime ${server}, ${serverFrom(origin)})`;
  if (origin.unusedAdminKey && (origin.key === 'FACTORY_API_KEY' || origin.key === '--api-key')) {
    const drop = origin.key === 'FACTORY_API_KEY' ? 'unset FACTORY_API_KEY' : 'drop --api-key';
    return `${base}; ${drop} to use the admin key in ${origin.unusedAdminKey}.`;
  }
  return `${base}.`;
}

function toError(res: Response, parsed: unknown, text: string, server: string, origin?: ClientOrigin): FactoryError {
  const p = (parsed ?? {}) as { code?: unknown; detail?: unknown; errors?: unknown; retryable?: unknown };
  const known = typeof p.code === 'string' && p.code in ERROR_CODES;
  const code = (known ? p.code : codeForStatus(res.status)) as ErrorCode;
  // A refusal without a JSON body comes from something else on that port (a web page's 404), and
  // is named as such (README.md#commands).
  const given =
    typeof p.detail === 'string' && p.detail ? p.detail
    : parsed === null || typeof parsed !== 'object' ? `the server at ${server} answered ${res.status} ${res.statusText} with ${describeBody({ headers: res.headers, text })}, not as a factory runtime would; check --server or FACTORY_SERVER.`
    : `the runtime at ${server} answered ${res.status} ${res.statusText}.`;
  const detail = withOrigin(given, res.status, server, origin);
  return new FactoryError(code, detail, {
    errors: Array.isArray(p.errors) ? (p.errors as FieldError[]) : undefined,
    retryable: typeof p.retryable === 'boolean' ? p.retryable : undefined,
  });
}

function codeForStatus(status: number): ErrorCode {
  for (const [code, def] of Object.entries(ERROR_CODES)) if (def.status === status) return code as ErrorCode;
  return status >= 500 ? 'internal_error' : 'invalid_request';
}
