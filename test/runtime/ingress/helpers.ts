import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Limits } from '../../../runtime/config.ts';
import type { Clock } from '../../../runtime/clock.ts';
import { apiFetch, startTestRuntime, type ApiInit, type TestRuntime } from '../helpers.ts';
import { testExecutor } from '../executor/helpers.ts';
import { startCli } from '../../helpers/cli.ts';

/** A real runtime for ingress tests; `trustProxy` lets a test pick the sender with X-Forwarded-For. */
export function startIngressRuntime(options: { clock?: Clock; limits?: Partial<Limits>; trustProxy?: boolean } = {}) {
  return startTestRuntime({ clock: options.clock, flags: { limits: options.limits, trustProxy: options.trustProxy } });
}

export interface CreatedHook {
  uid: string;
  url: string;
  secret?: string;
  body: Record<string, any>;
}

/** Creates an API-managed webhook through the management API; throws unless 201. */
export async function createHook(rt: TestRuntime, factory: string, body: Record<string, unknown>): Promise<CreatedHook> {
  const res = await rt.fetch(`/api/v1/factories/${factory}/webhooks`, { method: 'POST', json: body });
  const json = (await res.json()) as Record<string, any>;
  if (res.status !== 201) throw new Error(`create webhook: ${res.status} ${JSON.stringify(json)}`);
  return { uid: json.webhook.uid, url: json.webhook.url, secret: json.secret, body: json };
}

/** POSTs `body` to an ingress URL. */
export function deliver(url: string, body: string | Buffer | Uint8Array, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers, body });
}

/** The delivery log of a webhook through the API, newest first. */
export async function logOf(rt: TestRuntime, uid: string, limit = 100): Promise<Record<string, any>[]> {
  const res = await rt.fetch(`/api/v1/webhooks/${uid}/deliveries?limit=${limit}`);
  if (res.status !== 200) throw new Error(`log: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { deliveries: Record<string, any>[] }).deliveries;
}

/**
 * A raw node:http POST whose body is written by `write` (no Content-Length unless given: chunked).
 * Resolves with the status and body as soon as the response ends, even while the request body
 * is still being written; a socket error after the response is ignored.
 */
export function rawPost(
  url: string,
  headers: Record<string, string | number>,
  write: (req: import('node:http').ClientRequest) => void,
): Promise<{ status: number; body: string; headers: import('node:http').IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        answered = true;
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers });
        req.destroy();
      });
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    write(req);
  });
}

/** A runtime in its own process (`factory serve`), for tests that measure or kill the server. */
export interface ChildRuntime {
  proc: import('node:child_process').ChildProcess;
  /** Resolves when the process has exited (however it ended). */
  exited: Promise<unknown>;
  url: string;
  dataDir: string;
  /** `fetch` relative to the server URL with the admin key (or `key`, when given). */
  fetch(path: string, init?: ApiInit): Promise<Response>;
  /** SIGTERM, wait for the exit, and remove the data dir when this helper made it. */
  stop(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Starts `bin/factory.js serve` on port 0 with the given environment, in a new temp data dir or
 * in `options.dataDir` (a restart on the same data), with any extra serve flags.
 */
export async function startChildRuntime(env: Record<string, string> = {}, options: { dataDir?: string; args?: string[] } = {}): Promise<ChildRuntime> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'factory-child-'));
  // Runs execute in the sandbox (the default); the example agents are an installation it may read.
  const args = ['serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'warn', '--sandbox-ro-bind', join(ROOT, 'examples/agents'), '--local-repos', tmpdir(), '--local-repos', ROOT, '--executor', testExecutor(), ...(options.args ?? [])];
  const serving = startCli(args, { cwd: ROOT, env: { ...process.env, FACTORY_MASTER_KEY: '', ...env } as Record<string, string> });
  const proc = serving.child;
  const exited = serving.exited;
  const listening = () => /factory runtime listening on (http:\/\/\S+)/.exec(serving.stdout());
  await serving.waitFor(() => listening() !== null, 'serve to listen');
  const url = listening()![1];
  const adminKey = readFileSync(join(dataDir, 'admin.key'), 'utf8').trim();
  return {
    proc,
    exited,
    url,
    dataDir,
    fetch: apiFetch(url, adminKey),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
      if (ownDir) {
        rmSync(dataDir, { recursive: true, force: true });
        rmSync(`${dataDir}-workspaces`, { recursive: true, force: true });
      }
    },
  };
}
