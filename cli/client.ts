import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, ERROR_CODES, FactoryError, type ErrorCode, type FieldError } from '../core/errors.ts';
import type { CliIO } from './io.ts';

export const DEFAULT_SERVER = 'http://127.0.0.1:8080';

/** The options every online command shares (SPEC 5): where the runtime is and which key to use. */
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

/**
 * Adds `--server`, `--api-key` and `--data-dir` to a command, so every online command finds the
 * runtime and the key the same way. Read them back with `clientFromFlags(cmd.opts(), io)`.
 */
export function addClientOptions(cmd: Command): Command {
  return cmd
    .option('--server <url>', `the runtime's URL (env FACTORY_SERVER, default ${DEFAULT_SERVER})`)
    .option('--api-key <key>', 'API key (env FACTORY_API_KEY, recommended; default: <data-dir>/admin.key)')
    .option('--data-dir <dir>', "where to find admin.key (env FACTORY_DATA_DIR, default ./.factory)");
}

/**
 * Resolves the server and the key: `--server`/FACTORY_SERVER/default, then `--api-key`/
 * FACTORY_API_KEY, else `<data-dir>/admin.key` (`--data-dir`/FACTORY_DATA_DIR/`./.factory`
 * relative to the working directory). No key anywhere is a CliError that says how to pass one.
 */
export function resolveClientFlags(flags: ClientFlags, io: CliIO): { server: string; apiKey: string } {
  const server = (flags.server || io.env.FACTORY_SERVER || DEFAULT_SERVER).replace(/\/+$/, '');
  try {
    const u = new URL(server);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
  } catch {
    throw new CliError(`--server must be an http(s) URL, got "${server}".`, 2);
  }
  const explicit = flags.apiKey || io.env.FACTORY_API_KEY;
  if (explicit) return { server, apiKey: explicit.trim() };
  const dir = flags.dataDir || io.env.FACTORY_DATA_DIR || './.factory';
  const file = join(isAbsolute(dir) ? dir : resolve(io.cwd, dir), 'admin.key');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`no API key: set FACTORY_API_KEY (or pass --api-key), or run where ${file} exists (--data-dir).`);
  }
  return { server, apiKey: text.trim() };
}

/** The client for a command's flags (see addClientOptions). */
export function clientFromFlags(flags: ClientFlags, io: CliIO): Client {
  return createClient(resolveClientFlags(flags, io));
}

/** An HTTP client for the management and run APIs. */
export function createClient(options: { server: string; apiKey: string }): Client {
  const server = options.server.replace(/\/+$/, '');
  const send = async <T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ClientResponse<T>> => {
    const h: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${options.apiKey}`, ...headers };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(server + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new CliError(`cannot reach the runtime at ${server}: is \`factory serve\` running?`);
    }
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    let parsed: unknown;
    if (text && /json/.test(type)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!res.ok) throw toError(res, parsed, server);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
  return {
    server,
    send,
    request: async <T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
      (await send<T>(method, path, body, headers)).body,
  };
}

function toError(res: Response, parsed: unknown, server: string): FactoryError {
  const p = (parsed ?? {}) as { code?: unknown; detail?: unknown; errors?: unknown; retryable?: unknown };
  const known = typeof p.code === 'string' && p.code in ERROR_CODES;
  const code = (known ? p.code : codeForStatus(res.status)) as ErrorCode;
  const detail = typeof p.detail === 'string' && p.detail ? p.detail : `the runtime at ${server} answered ${res.status} ${res.statusText}.`;
  return new FactoryError(code, detail, {
    errors: Array.isArray(p.errors) ? (p.errors as FieldError[]) : undefined,
    retryable: typeof p.retryable === 'boolean' ? p.retryable : undefined,
  });
}

function codeForStatus(status: number): ErrorCode {
  for (const [code, def] of Object.entries(ERROR_CODES)) if (def.status === status) return code as ErrorCode;
  return status >= 500 ? 'internal_error' : 'invalid_request';
}
