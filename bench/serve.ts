import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseConfig } from '../runtime/config.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';
import type { AcceptItem } from '../runtime/store/deliveries.ts';
import { buildCli } from '../scripts/build.ts';

const ROOT = resolve(import.meta.dirname, '..');
const DELIVERIES = 100_000;
const WEBHOOKS = 20;
const RUNS = 3;
/** `factory serve` answers its first 200 on /healthz under 0.6 s after it is started, with a full delivery log. */
const TARGET_S = 0.6;

/**
 * `factory serve` start-up with a large delivery log: a data dir's database is filled once with
 * DELIVERIES Accepted deliveries through the store's own write path (acceptBatch, as the ingress
 * writes them), then a child `factory serve` is started RUNS times and timed from spawn to the
 * first 200 on /healthz (median), for the built CLI (the target) and the tsx one alongside.
 */
export async function benchServeStart(print: (line: string) => void): Promise<void> {
  const base = mkdtempSync(join(os.tmpdir(), 'factory-bench-serve-'));
  mkdirSync(join(ROOT, 'tmp'), { recursive: true });
  // Inside the repo, so node_modules resolves from the build as it does from dist/.
  const outdir = mkdtempSync(join(ROOT, 'tmp', 'bench-serve-'));
  try {
    const dataDir = join(base, 'data');
    const filling = performance.now();
    const config = parseConfig({ port: 0, dataDir, logLevel: 'silent', executor: 'direct' }, {});
    const server = await startServer(config, { log: createLogger({ level: 'silent' }) });
    try {
      server.services.executor?.pause();
      const payload = Buffer.from(JSON.stringify({ action: 'opened', pull_request: { base: { ref: 'main' }, draft: false }, labels: [] }));
      for (let done = 0; done < DELIVERIES; ) {
        const batch: AcceptItem[] = [];
        for (let i = 0; i < 1000 && done < DELIVERIES; i++, done++) {
          batch.push({
            facts: { webhookUid: `wh_benchserve${String(done % WEBHOOKS).padStart(2, '0')}${'a'.repeat(14)}`, deliveryId: `d-${done}`, size: payload.length, receivedAt: new Date(), sender: '127.0.0.1', contentType: 'application/json' },
            payload,
          });
        }
        server.store.deliveries.acceptBatch(batch, config.limits.identityDays);
      }
    } finally {
      await server.close();
    }
    print(`serve start: ${DELIVERIES.toLocaleString('en')} deliveries written through the store in ${((performance.now() - filling) / 1000).toFixed(1)} s`);

    await buildCli(outdir);
    const built = [join(outdir, 'cli', 'main.js')];
    // What this bench and the ones before it wrote (the ingress bench writes gigabytes) is flushed
    // first: the kernel's writeback of it would otherwise compete with the starts measured here.
    const flushing = performance.now();
    execFileSync('sync');
    print(`serve start: dirty pages flushed (sync) in ${((performance.now() - flushing) / 1000).toFixed(1)} s before timing`);
    // The default executor is the sandbox (its bubblewrap probe runs at start); direct skips it.
    const subjects = [
      { label: 'built CLI', args: built, extra: [] },
      { label: 'built CLI, --executor direct', args: built, extra: ['--executor', 'direct'] },
      { label: 'tsx', args: ['--import', 'tsx', join(ROOT, 'cli', 'main.ts')], extra: [] },
    ];
    const times = new Map(subjects.map((s) => [s.label, { healthz: [] as number[], readyz: [] as number[] }]));
    // `node -e 0` alongside: this machine's speed moves during a day, and with it every start-up.
    const bareNode: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      for (const s of subjects) {
        const t = await timeStart(s.args, s.extra, dataDir, join(base, 'work'));
        times.get(s.label)!.healthz.push(t.healthz);
        times.get(s.label)!.readyz.push(t.readyz);
      }
      const t0 = performance.now();
      execFileSync(process.execPath, ['-e', '0']);
      bareNode.push((performance.now() - t0) / 1000);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    print(`serve start: spawn to first 200 on /healthz, median of ${RUNS}:`);
    for (const s of subjects) print(`  ${s.label}: ${median(times.get(s.label)!.healthz).toFixed(3)} s`);
    const main = median(times.get(subjects[0].label)!.healthz);
    print(`  node -e 0, alongside: ${median(bareNode).toFixed(3)} s (the built CLI took ${(main / median(bareNode)).toFixed(1)}× that)`);
    print(`serve start: spawn to first 200 on /readyz (database open, claims index loaded, app ready; information, no target), median of ${RUNS}:`);
    for (const s of subjects) print(`  ${s.label}: ${median(times.get(s.label)!.readyz).toFixed(3)} s`);
    print(`serve start: target under ${TARGET_S} s for the built CLI with the default executor: ${main.toFixed(3)} s, ${main < TARGET_S ? 'met' : 'NOT met'}`);
  } finally {
    rmSync(base, { recursive: true, force: true });
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** A port free right now, so the child can be told it and polled without reading its output. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

/**
 * Seconds from spawning `serve` to its first 200 on /healthz (the target's figure: it listens and
 * answers), then to its first 200 on /readyz (information: the database open, the claims index
 * loaded, the HTTP app ready to serve everything); the child is stopped (SIGTERM) and awaited after.
 */
async function timeStart(args: string[], extra: string[], dataDir: string, workDir: string): Promise<{ healthz: number; readyz: number }> {
  const port = await freePort();
  const env = { ...process.env, FACTORY_CLI_ENTRY: '1', NO_COLOR: '1' };
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args, 'serve', '--data-dir', dataDir, '--work-dir', workDir, '--port', String(port), '--log-level', 'silent', ...extra], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  const firstOk = async (path: string): Promise<number> => {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`serve exited with ${child.exitCode} before answering: ${stderr.trim()}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}${path}`);
        await res.arrayBuffer();
        if (res.status === 200) return (performance.now() - t0) / 1000;
      } catch {
        // Not listening yet.
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  try {
    const healthz = await firstOk('/healthz');
    return { healthz, readyz: await firstOk('/readyz') };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchServeStart((line) => console.log(line));
