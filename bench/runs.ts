/**
 * Run creation throughput (issue 4): a real runtime on port 0 with the executor paused, N creates
 * over HTTP from C concurrent clients; prints creations per second and p50/p99 latency against
 * the target of 1,000 creations per second. Not asserted in tests (the machine is shared).
 */

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { compile } from '../cli/compiler/compile.ts';
import { parseConfig } from '../runtime/config.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';

export const TARGET_PER_SECOND = 1000;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

export async function benchRuns(print: (line: string) => void, opts: { total?: number; concurrency?: number } = {}): Promise<void> {
  const total = opts.total ?? 5000;
  const concurrency = opts.concurrency ?? 32;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-runs-'));
  const server = await startServer(parseConfig({ port: 0, dataDir, logLevel: 'silent' }, {}), { log: createLogger({ level: 'silent' }) });
  try {
    server.services.executor?.pause();
    const key = readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
    const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
    const { snapshot } = compile([
      { path: 'factory.yaml', text: 'name: bench\n' },
      { path: 'environments/bench.yaml', text: JSON.stringify({ agent: { command: ['true'] } }) },
    ]);
    const applied = await fetch(`${server.url}/api/v1/factories/bench/apply`, { method: 'POST', headers, body: JSON.stringify({ snapshot }) });
    if (applied.status !== 200) throw new Error(`apply failed: ${applied.status}`);

    const body = JSON.stringify({ prompt: 'Benchmark run: summarise the repository.', config: { environment_id: 'bench' } });
    // node:http with keep-alive: a lighter client than fetch, so the bench measures the server.
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const url = new URL(`${server.url}/api/v1/agent/runs`);
    const create = () =>
      new Promise<number>((resolve, reject) => {
        const t0 = performance.now();
        const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 201 ? resolve(performance.now() - t0) : reject(new Error(`create answered ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(body);
      });
    for (let i = 0; i < 200; i++) await create(); // warm-up: JIT, statement caches, connections

    const latencies: number[] = [];
    let next = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < total) {
          next++;
          latencies.push(await create());
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    latencies.sort((a, b) => a - b);
    const rate = latencies.length / seconds;
    print(`run creates: ${latencies.length} over HTTP, ${concurrency} concurrent clients, executor paused`);
    print(`  ${rate.toFixed(0)} creations/s (target ${TARGET_PER_SECOND}/s: ${rate >= TARGET_PER_SECOND ? 'met' : 'NOT met'})`);
    print(`  latency p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, max ${latencies.at(-1)!.toFixed(2)} ms`);
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRuns((l) => console.log(l));
}
