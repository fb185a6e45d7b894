/**
 * Ingress throughput (issue 5): signed 1 KB GitHub-style deliveries with unique ids against the
 * runtime (real server, real SQLite file in WAL, rate limits raised by config), and the same
 * client loop against a bare node:http server answering 202, on the same machine in the same
 * run. Prints accepted deliveries per second, p50 and p99 for both, and the ratio (target: at
 * least 0.5). Then checks that every 202 is in the delivery log. Not asserted in tests.
 *
 * The load comes from a separate process (this file, forked with `--client`) for both targets:
 * a client loop in the server's own process would take the server's CPU and event loop and
 * measure the client as much as the server. Both targets share that one client, side by side.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { pino } from 'pino';
import { parseConfig } from '../runtime/config.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';
import { createWebhook } from '../runtime/ingress/lifecycle.ts';

export const TARGET_RATIO = 0.5;

const SECRET = 'bench-github-secret';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

interface LoopResult {
  perSecond: number;
  p50: number;
  p99: number;
  accepted: number;
  ids: string[];
}

interface Request {
  body: string;
  headers: Record<string, string>;
}

/** `requests.length` POSTs from `concurrency` keep-alive workers. Runs in the client process. */
async function loop(url: string, requests: readonly Request[], concurrency: number): Promise<LoopResult> {
  const total = requests.length;
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  const ids: string[] = [];
  let next = 0;
  let accepted = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const { body, headers } = requests[i];
      const start = process.hrtime.bigint();
      const req = http.request(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
            if (res.statusCode === 202) {
              accepted += 1;
              try {
                ids.push((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { delivery_id: string }).delivery_id);
              } catch {
                // The bare server's body is not ours to parse.
              }
            }
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await one(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { perSecond: accepted / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), accepted, ids };
}

/** A 1 KB GitHub-style push payload with a unique id inside. */
function payload(i: number): string {
  const base = { ref: 'refs/heads/main', after: randomUUID(), seq: i, repository: { full_name: 'octo/bench', private: false }, pusher: { name: 'bench' }, commits: [] as unknown[], pad: '' };
  const text = JSON.stringify(base);
  base.pad = 'x'.repeat(Math.max(0, 1024 - text.length));
  return JSON.stringify(base);
}

/** `count` signed deliveries with unique ids, numbered from `from`. */
function signedRequests(count: number, from: number): Promise<Request[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const body = payload(from + i);
      return {
        body,
        headers: {
          'Content-Type': 'application/json',
          'X-GitHub-Event': 'push',
          'X-GitHub-Delivery': randomUUID(),
          'X-Hub-Signature-256': await sign(SECRET, body),
        },
      };
    }),
  );
}

type ClientCommand = { url: string; set: 'main' | 'warm'; concurrency: number };

/**
 * The client process: pre-signs the deliveries once (so both targets get the very same requests
 * and no signing happens in the timed loops), then runs one loop per command from the parent.
 */
async function clientMain(total: number, warmCount: number): Promise<void> {
  const sets = { main: await signedRequests(total, 0), warm: await signedRequests(warmCount, total) };
  process.on('message', (cmd: ClientCommand) => {
    void loop(cmd.url, sets[cmd.set], cmd.concurrency).then(
      (r) => process.send!({ ok: true, result: r }),
      (err: Error) => process.send!({ ok: false, error: String(err?.stack ?? err) }),
    );
  });
  process.send!({ ready: true });
}

/** Starts the client process and waits until its requests are signed. */
async function startClient(total: number, warmCount: number): Promise<{ run(cmd: ClientCommand): Promise<LoopResult>; stop(): void }> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--client', String(total), String(warmCount)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`bench client exited with ${code}`)));
  });
  return {
    run: (cmd) =>
      new Promise((resolve, reject) => {
        child.once('message', (m: { ok: boolean; result?: LoopResult; error?: string }) => (m.ok ? resolve(m.result!) : reject(new Error(m.error))));
        child.send(cmd);
      }),
    stop: () => {
      child.removeAllListeners('exit');
      child.kill();
    },
  };
}

/**
 * Runs `fn` and adds the server process's CPU time over it. The client is its own process, so
 * this is what serving cost, whichever side the throughput was bound by.
 */
async function measured(fn: () => Promise<LoopResult>): Promise<LoopResult & { cpuMicros: number }> {
  const before = process.cpuUsage();
  const r = await fn();
  const cpu = process.cpuUsage(before);
  return { ...r, cpuMicros: cpu.user + cpu.system };
}

export async function benchIngress(print: (line: string) => void, opts: { total?: number; concurrency?: number } = {}): Promise<void> {
  const total = opts.total ?? 5000;
  const concurrency = opts.concurrency ?? 64;
  const warmCount = 200;
  const client = await startClient(total, warmCount);

  // The bare baseline: node:http answering 202 after reading the body.
  const bare = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(202, { 'Content-Type': 'application/json' });
      res.end('{"delivery_id":"x"}');
    });
  });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/webhooks/w/bare`;

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-ingress-'));
  const limits = { deliveriesPerMinute: 1_000_000_000, failedAuthPerMinute: 1_000_000_000 };
  // The runtime logs as in production (info: one access line per request), into /dev/null.
  const log = createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: true }) });
  const server = await startServer(parseConfig({ port: 0, dataDir, logLevel: 'info', limits }, {}), { log });
  try {
    const { webhook } = createWebhook(server.store, 'bench', { name: 'github', authMode: 'signature', signatureScheme: 'github', secret: SECRET }, 20);
    const url = `${server.url}/webhooks/w/${webhook.uid}`;

    // Warm both up (JIT, prepared statements, the secret cache) with deliveries not counted below.
    await client.run({ url: bareUrl, set: 'warm', concurrency });
    await client.run({ url, set: 'warm', concurrency });

    const base = await measured(() => client.run({ url: bareUrl, set: 'main', concurrency }));
    const ing = await measured(() => client.run({ url, set: 'main', concurrency }));
    const ratio = ing.perSecond / base.perSecond;
    const row = (name: string, r: LoopResult & { cpuMicros: number }) =>
      `  ${name.padEnd(10)} ${r.perSecond.toFixed(0).padStart(7)} accepted/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   ` +
      `server CPU ${(r.cpuMicros / total).toFixed(0)} µs/request   (${r.accepted}/${total} 202)`;
    print(`ingress: ${total} signed 1 KB GitHub deliveries, ${concurrency} concurrent keep-alive clients (load from a separate process)`);
    print(row('bare http', base));
    print(row('ingress', ing));
    print(`  ratio      ${ratio.toFixed(2)} (target >= ${TARGET_RATIO}: ${ratio >= TARGET_RATIO ? 'met' : 'NOT met'})`);

    // Every 202 is durably in the log: each returned id has an Accepted entry with its payload.
    let missing = 0;
    for (const id of ing.ids) {
      const entry = server.store.deliveries.get(webhook.uid, id);
      if (!entry || entry.outcome !== 'accepted' || !entry.hasPayload) missing += 1;
    }
    print(`  log        ${ing.ids.length - missing}/${ing.ids.length} answered 202 are Accepted in the log${missing ? ` (${missing} MISSING)` : ''}`);
  } finally {
    client.stop();
    await server.close();
    await new Promise<void>((resolve) => bare.close(() => resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--client') await clientMain(Number(process.argv[3]), Number(process.argv[4]));
  else await benchIngress((line) => console.log(line));
}
