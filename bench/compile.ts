import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { compile, loadRepo } from '../cli/compiler/index.ts';

const WEBHOOKS = 20;
const AUTOMATIONS = 2000;
const ITERATIONS = 5;
/** Issue 2: a repo of 20 webhooks and 2,000 automations compiles in under 2 seconds. */
const TARGET_MS = 2000;

const uid = (i: number) => 'wh_bench' + 'abcdefghijklmnopqrstuvwxyz234567'[i] + 'a'.repeat(20);

/** Generates the repo in a temp dir, then times loadRepo + compile (median of a few runs). */
export async function benchCompile(print: (line: string) => void): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'factory-bench-'));
  try {
    await mkdir(join(dir, 'webhooks'));
    await mkdir(join(dir, 'automations'));
    await mkdir(join(dir, 'environments'));
    await writeFile(join(dir, 'factory.yaml'), 'name: bench\n');
    await writeFile(join(dir, 'environments/sandbox.yaml'), 'agent:\n  command: [node, agent.mjs]\n');
    for (let i = 0; i < WEBHOOKS; i++) {
      await writeFile(join(dir, `webhooks/hook-${i}.yaml`), `authMode: token\nsecretName: hook-${i}-token\nuid: ${uid(i)}\n`);
    }
    for (let i = 0; i < AUTOMATIONS; i++) {
      const text = `---\ntitle: Automation ${i}\nenvironment: sandbox\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [${uid(i % WEBHOOKS)}]\n      payload:\n        action: [opened, reopened]\n        pull_request: {base: {ref: main}, draft: false}\n        labels: {name: {not_in: [wip]}}\n---\nHandle event ${i}: read event-payload.json and act on it.\n`;
      await writeFile(join(dir, `automations/auto-${i}.md`), text);
    }
    const files = WEBHOOKS + AUTOMATIONS + 2;
    const times: number[] = [];
    const loads: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const start = performance.now();
      const sources = await loadRepo(dir);
      loads.push(performance.now() - start);
      const result = compile(sources, { root: resolve(dir) });
      times.push(performance.now() - start);
      if (!result.snapshot) throw new Error(`bench repo did not compile: ${result.diagnostics[0]?.message}`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const total = median(times);
    print(
      `compile: ${files} files (${WEBHOOKS} webhooks, ${AUTOMATIONS} automations), median of ${ITERATIONS}: ${total.toFixed(0)} ms (loadRepo ${median(loads).toFixed(0)} ms)`,
    );
    print(`compile: ${Math.round((files / total) * 1000)} files/s; ${(total / TARGET_MS).toFixed(2)} of the ${TARGET_MS} ms target`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchCompile((line) => console.log(line));
