import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { INHERITED_ENV, parseConfig, type ConfigFlags } from '../../runtime/config.ts';
import { createLogger } from '../../runtime/log.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import type { Clock } from '../../runtime/clock.ts';
import { testExecutor } from './executor/helpers.ts';

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

/** `fetch` relative to `baseUrl`, with the admin key unless `init.key` says otherwise. */
export function apiFetch(baseUrl: string, adminKey: string): (path: string, init?: ApiInit) => Promise<Response> {
  return (path, init = {}) => {
    const { key, json, ...rest } = init;
    const headers = new Headers(rest.headers);
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
  options: { flags?: ConfigFlags; env?: Record<string, string>; dataDir?: string; clock?: Clock; keepDataDir?: boolean } = {},
): Promise<TestRuntime> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'factory-test-'));
  // Only the variables a real runtime would pass on to agents (PATH, HOME, ...) come from this
  // process; no stray FACTORY_* value of the test environment changes the config.
  const inherited = Object.fromEntries(INHERITED_ENV.flatMap((n) => (process.env[n] === undefined ? [] : [[n, process.env[n]]])));
  // Runs execute in the sandbox (the default); the example agents are an installation it may read.
  const config = parseConfig({ port: 0, executor: testExecutor(), sandboxRoBind: [EXAMPLE_AGENTS], ...options.flags, dataDir }, { ...inherited, ...options.env });
  const logs = new LogCapture();
  const server = await startServer(config, { log: createLogger({ level: 'debug', destination: logs }), clock: options.clock }).catch((err) => {
    if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const adminKey = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
  const keep = options.keepDataDir ?? options.dataDir !== undefined;
  return {
    ...server,
    dataDir,
    adminKey,
    logs,
    fetch: apiFetch(server.url, adminKey),
    async stop() {
      await server.close();
      if (!keep) {
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(config.workDir, { recursive: true, force: true });
      }
    },
  };
}
