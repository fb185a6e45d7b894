/**
 * Ingress throughput (issue 5): signed 1 KB GitHub-style deliveries with unique ids against the
 * runtime (real server, real SQLite file in WAL, rate limits raised by config), and the same
 * client loop against a bare node:http server answering 202, on the same machine in the same
 * run. Prints accepted deliveries per second, p50 and p99 for both, and the ratio (target: at
 * least 0.5). Then checks that every 202 is in the delivery log. Not asserted in tests.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { parseConfig } from '../runtime/config.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';
import { createWebhook } from '../runtime/ingress/lifecycle.ts';

export const TARGET_RATIO = 0.5;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

interface LoopResult {
  perSecond: number;
  p50: number;
  p99: number;
  accepted: number;
  ids: string[];
}

/** `total` POSTs from `concurrency` keep-alive workers; each request body and headers come from `make(i)`. */
async function loop(
  url: string,
  total: number,
  concurrency: number,
  make: (i: number) => { body: string; headers: Record<string, string> },
): Promise<LoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  const ids: string[] = [];
  let next = 0;
  let accepted = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const { body, headers } = make(i);
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

export async function benchIngress(print: (line: string) => void, opts: { total?: number; concurrency?: number } = {}): Promise<void> {
  const total = opts.total ?? 5000;
  const concurrency = opts.concurrency ?? 64;
  const secret = 'bench-github-secret';

  // Pre-sign outside the timed loops, so both servers see the same client work.
  const requests = await Promise.all(
    Array.from({ length: total }, async (_, i) => {
      const body = payload(i);
      return {
        body,
        headers: {
          'Content-Type': 'application/json',
          'X-GitHub-Event': 'push',
          'X-GitHub-Delivery': randomUUID(),
          'X-Hub-Signature-256': await sign(secret, body),
        },
      };
    }),
  );

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
  const server = await startServer(parseConfig({ port: 0, dataDir, logLevel: 'silent', limits }, {}), { log: createLogger({ level: 'silent' }) });
  try {
    const { webhook } = createWebhook(server.store, 'bench', { name: 'github', authMode: 'signature', signatureScheme: 'github', secret }, 20);
    const url = `${server.url}/webhooks/w/${webhook.uid}`;

    // Warm both up (JIT, prepared statements, the secret cache) with unlogged-by-the-result requests.
    await loop(bareUrl, 200, concurrency, (i) => requests[i % total]);
    const warm = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const body = payload(-1 - i);
      return { body, headers: { 'X-GitHub-Delivery': randomUUID(), 'X-Hub-Signature-256': await sign(secret, body) } };
    }));
    await loop(url, warm.length, concurrency, (i) => warm[i]);

    const base = await loop(bareUrl, total, concurrency, (i) => requests[i]);
    const ing = await loop(url, total, concurrency, (i) => requests[i]);
    const ratio = ing.perSecond / base.perSecond;
    const row = (name: string, r: LoopResult) =>
      `  ${name.padEnd(10)} ${r.perSecond.toFixed(0).padStart(7)} accepted/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   (${r.accepted}/${total} 202)`;
    print(`ingress: ${total} signed 1 KB GitHub deliveries, ${concurrency} concurrent keep-alive clients`);
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
    await server.close();
    await new Promise<void>((resolve) => bare.close(() => resolve()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchIngress((line) => console.log(line));
}
