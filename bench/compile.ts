import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient } from '../cli/client.ts';
import { requestApply } from '../cli/commands/apply.ts';
import { compile, loadRepo } from '../cli/compiler/index.ts';
import { parseConfig } from '../runtime/config.ts';
import { createLogger } from '../runtime/log.ts';
import { startServer } from '../runtime/server.ts';

const WEBHOOKS = 20;
const ITERATIONS = 5;
/**
 * Two sizes side by side, so a step that grows faster than the repo shows as a ratio over 10:
 * 2,000 automations under 2 seconds, and 20,000 (ten times as many) under 5 seconds.
 */
const SIZES = [
  { automations: 2000, targetMs: 2000, iterations: ITERATIONS },
  { automations: 20000, targetMs: 5000, iterations: 3 },
];

const uid = (i: number) => 'wh_bench' + 'abcdefghijklmnopqrstuvwxyz234567'[i] + 'a'.repeat(20);

/**
 * Writes a factory repo of `webhooks` webhooks (token auth, secret `hook-<i>-token`, pinned UIDs)
 * and `automations` automations, each with a webhook_ids and payload filter, into `dir`.
 * The bench and the large-apply test share it (test/cli/commands/apply-size.test.ts).
 */
export async function writeBenchRepo(dir: string, counts: { webhooks: number; automations: number; name?: string }): Promise<void> {
  await mkdir(join(dir, 'webhooks'), { recursive: true });
  await mkdir(join(dir, 'automations'), { recursive: true });
  await mkdir(join(dir, 'environments'), { recursive: true });
  await writeFile(join(dir, 'factory.yaml'), `name: ${counts.name ?? 'bench'}\n`);
  await writeFile(join(dir, 'environments/sandbox.yaml'), 'agent:\n  command: [node, agent.mjs]\n');
  for (let i = 0; i < counts.webhooks; i++) {
    await writeFile(join(dir, `webhooks/hook-${i}.yaml`), `authMode: token\nsecretName: hook-${i}-token\nuid: ${uid(i)}\n`);
  }
  const writes: Promise<void>[] = [];
  for (let i = 0; i < counts.automations; i++) {
    const text = `---\ntitle: Automation ${i}\nenvironment: sandbox\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${uid(i % counts.webhooks)}]\n      payload:\n        action: [opened, reopened]\n        pull_request: {base: {ref: main}, draft: false}\n        labels: {name: {not_in: [wip]}}\n---\nHandle event ${i}: read event-payload.json and act on it.\n`;
    writes.push(writeFile(join(dir, `automations/auto-${i}.md`), text));
    if (writes.length >= 64) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
}

/**
 * Ten times the automations may take at most this many times as long (linear is at most 10×, less
 * while fixed costs such as compiling the schemas weigh in); a quadratic step would make it ~100×.
 */
const MAX_GROWTH = 20;

/**
 * Generates each repo in a temp dir, then times loadRepo + compile (median of a few runs): wall
 * time, which the target is about, and the process's CPU time beside it (the machine is shared:
 * when the wall time is far above the CPU time, other work was running).
 */
export async function benchCompile(print: (line: string) => void): Promise<void> {
  const medians: number[] = [];
  print(`compile: load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} on ${availableParallelism()} cores`);
  for (const size of SIZES) {
    const dir = await mkdtemp(join(tmpdir(), 'factory-bench-'));
    try {
      await writeBenchRepo(dir, { webhooks: WEBHOOKS, automations: size.automations });
      const files = WEBHOOKS + size.automations + 2;
      const times: number[] = [];
      const cpus: number[] = [];
      const loads: number[] = [];
      for (let i = 0; i < size.iterations; i++) {
        const start = performance.now();
        const cpuStart = process.cpuUsage();
        const sources = await loadRepo(dir);
        loads.push(performance.now() - start);
        const result = compile(sources, { root: resolve(dir) });
        times.push(performance.now() - start);
        const cpu = process.cpuUsage(cpuStart);
        cpus.push((cpu.user + cpu.system) / 1000);
        if (!result.snapshot) throw new Error(`bench repo did not compile: ${result.diagnostics[0]?.message}`);
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const total = median(times);
      medians.push(total);
      print(
        `compile: ${files} files (${WEBHOOKS} webhooks, ${size.automations} automations), median of ${size.iterations}: ${total.toFixed(0)} ms ` +
          `(loadRepo ${median(loads).toFixed(0)} ms; CPU ${median(cpus).toFixed(0)} ms)`,
      );
      print(
        `compile: ${Math.round((files / total) * 1000)} files/s; target: under ${size.targetMs} ms: ${(total / size.targetMs).toFixed(2)} of it (${total < size.targetMs ? 'met' : 'NOT met'})`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const growth = medians[1] / medians[0];
  const times = SIZES[1].automations / SIZES[0].automations;
  print(
    `compile: ${SIZES[1].automations} automations took ${growth.toFixed(1)}× the time of ${SIZES[0].automations} (linear: at most ${times}×); ` +
      `target: no quadratic step, under ${MAX_GROWTH}× (${growth < MAX_GROWTH ? 'met' : 'NOT met'})`,
  );
  await benchApply(print);
}

/** Automations of the apply figure: a snapshot of about 2.7 MB, gzip-compressed by the CLI's client. */
const APPLY_AUTOMATIONS = 5000;

/**
 * `factory apply` of 20 webhooks and APPLY_AUTOMATIONS automations over HTTP to a real runtime
 * (docs/plan-apply.md#large-factories): the request the CLI makes, through its own client, timed
 * from sending the compiled snapshot to the answer. The target is that it succeeds at all; the
 * time is printed for the record.
 */
async function benchApply(print: (line: string) => void): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'factory-bench-apply-'));
  const config = parseConfig({ port: 0, dataDir: join(dir, 'data'), logLevel: 'silent', executor: 'direct' }, {});
  const server = await startServer(config, { log: createLogger({ level: 'silent' }) });
  try {
    const repo = join(dir, 'repo');
    await writeBenchRepo(repo, { webhooks: WEBHOOKS, automations: APPLY_AUTOMATIONS });
    const result = compile(await loadRepo(repo), { root: resolve(repo) });
    if (!result.snapshot) throw new Error(`bench repo did not compile: ${result.diagnostics[0]?.message}`);
    const apiKey = (await readFile(server.adminKeyPath, 'utf8')).trim();
    const client = createClient({ server: server.url, apiKey });
    for (let i = 0; i < WEBHOOKS; i++) await client.request('POST', '/api/v1/secrets', { name: `hook-${i}-token`, value: `bench-token-${i}-${'x'.repeat(32)}` });
    const bytes = Buffer.byteLength(JSON.stringify({ snapshot: result.snapshot }));
    const start = performance.now();
    let outcome: string;
    try {
      const answer = await requestApply(client, result.snapshot);
      outcome = answer.applied ? 'met' : 'NOT met (nothing applied)';
    } catch (err) {
      outcome = `NOT met (${(err as Error).message})`;
    }
    const ms = performance.now() - start;
    print(`apply: ${WEBHOOKS} webhooks + ${APPLY_AUTOMATIONS} automations over HTTP (snapshot ${(bytes / 1e6).toFixed(1)} MB, sent gzip): ${ms.toFixed(0)} ms; target: applies (${outcome})`);
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
    await rm(config.workDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchCompile((line) => console.log(line));
