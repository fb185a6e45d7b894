/**
 * Run creation throughput: a real runtime on port 0 with the executor paused, N creates
 * over HTTP from C concurrent clients; prints creations per second and p50/p99 latency against
 * the target of 1,000 creations per second, then N more from 16 clients against the target of a
 * p99 under 20 ms. Then the sandbox's cost per command and `serve` start-up (bench/serve.ts).
 * Not asserted in tests (the machine is shared).
 */

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { compile } from '../cli/compiler/compile.ts';
import { parseConfig } from '../runtime/config.ts';
import { runInGroup } from '../runtime/executor/process.ts';
import { isolationOf, probeIsolation, RunSandbox } from '../runtime/executor/sandbox.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';
import { benchServeStart } from './serve.ts';

export const TARGET_PER_SECOND = 1000;
/** At 16 concurrent clients, 99% of creations are answered within 20 ms. */
export const TARGET_P99_MS = 20;
const P99_CONCURRENCY = 16;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

export async function benchRuns(print: (line: string) => void, opts: { total?: number; concurrency?: number } = {}): Promise<void> {
  const total = opts.total ?? 5000;
  const concurrency = opts.concurrency ?? 32;
  const maxSockets = Math.max(concurrency, P99_CONCURRENCY);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-runs-'));
  // The executor is paused: which one it is does not matter here, so no bubblewrap is needed.
  const config = parseConfig({ port: 0, dataDir, logLevel: 'silent', executor: 'direct' }, {});
  const server = await startServer(config, { log: createLogger({ level: 'silent' }) });
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
    const agent = new http.Agent({ keepAlive: true, maxSockets });
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

    /** `total` creations from `clients` concurrent clients: the rate and the sorted latencies. */
    const round = async (clients: number) => {
      const latencies: number[] = [];
      let next = 0;
      const start = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (next < total) {
            next++;
            latencies.push(await create());
          }
        }),
      );
      const seconds = (performance.now() - start) / 1000;
      latencies.sort((a, b) => a - b);
      return { rate: latencies.length / seconds, latencies };
    };
    const { rate, latencies } = await round(concurrency);
    print(`run creates: ${latencies.length} over HTTP, ${concurrency} concurrent clients, executor paused`);
    print(`  ${rate.toFixed(0)} creations/s (target ${TARGET_PER_SECOND}/s: ${rate >= TARGET_PER_SECOND ? 'met' : 'NOT met'})`);
    print(`  latency p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, max ${latencies.at(-1)!.toFixed(2)} ms`);
    const at16 = await round(P99_CONCURRENCY);
    const p99 = percentile(at16.latencies, 99);
    print(`run creates: ${at16.latencies.length} over HTTP, ${P99_CONCURRENCY} concurrent clients: ${at16.rate.toFixed(0)} creations/s`);
    print(`  latency p50 ${percentile(at16.latencies, 50).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (target p99 under ${TARGET_P99_MS} ms: ${p99 < TARGET_P99_MS ? 'met' : 'NOT met'}), max ${at16.latencies.at(-1)!.toFixed(2)} ms`);
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(config.workDir, { recursive: true, force: true });
  }
  await benchSandboxStart(print);
  await benchServeStart(print);
}

/**
 * What the sandbox adds to each command of a run (docs/security.md#cost): `true` started N times
 * in a row through the sandbox (bubblewrap, setpriv when root, prlimit, the launcher) and N times
 * as a plain process group. A run starts one command per repo step, setup command, the agent,
 * and one per changed file for the diff.
 */
export async function benchSandboxStart(print: (line: string) => void, n = 50): Promise<void> {
  const base = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-sandbox-'));
  try {
    const config = parseConfig({ dataDir: path.join(base, 'data') }, {});
    const iso = isolationOf(config);
    const problem = probeIsolation(iso);
    if (problem) {
      print(`sandbox start: not measured (${problem.what})`);
      return;
    }
    const ws = path.join(base, 'ws');
    const sandbox = new RunSandbox(iso, ws);
    mkdirSync(ws);
    const time = async (start: () => Promise<unknown>) => {
      const each: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await start();
        each.push(performance.now() - t0);
      }
      return each.sort((a, b) => a - b);
    };
    const env = { PATH: '/usr/bin:/bin' };
    const plain = await time(() => runInGroup({ argv: ['true'], cwd: ws, env }));
    const boxed = await time(() => sandbox.run({ argv: ['true'], cwd: ws, env, network: false }));
    const median = (a: number[]) => percentile(a, 50);
    print(`sandbox start: ${n} commands \`true\` one after another`);
    print(`  sandboxed ${median(boxed).toFixed(1)} ms (p99 ${percentile(boxed, 99).toFixed(1)}), plain process group ${median(plain).toFixed(1)} ms: +${(median(boxed) - median(plain)).toFixed(1)} ms per command`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRuns((l) => console.log(l));
}
