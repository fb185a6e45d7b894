/**
 * Ingress throughput, driven by `wrk` (bench/wrk.ts): GitHub-signed deliveries, each with a
 * unique delivery id, against the runtime and against a bare node:http server, on the same machine
 * in the same run. The bare server is the baseline docs/ingress.md#benchmark defines: it collects
 * the body's chunks, Buffer.concat, JSON.parse (400 on a parse error), then 202 with a small JSON
 * body; it neither verifies the signature nor stores anything. When Debian's `webhook`
 * (adnanh/webhook) is on PATH it is a third target: one hook whose trigger rule checks the GitHub
 * HMAC-SHA256 signature and then misses on `ref` (its answer: 200 "Hook rules were not
 * satisfied.", which is what its row counts; its command, /bin/true, never runs), set against the
 * runtime's 1-automation miss row as the moonshot; without it, one line says the row was skipped.
 * Each target is its own process, so /proc/<pid>/stat gives the CPU each one spent serving (all
 * its threads: webhook, in Go, may use both cores); the targets alternate over several rounds, so
 * a noisy neighbour hits them alike. The runtime logs at info (one access line per request) into /dev/null, and
 * answers each delivery after the fsync that holds it, as in production; its executor is paused, so the runs that matching
 * deliveries create stay QUEUED and cost nothing while measuring.
 *
 * Rows: one automation whose filter misses (the headline, against the bare server), one that
 * matches (a run per delivery), 100 and 2,000 automations on one webhook whose filters all miss,
 * and bodies of 1 KB, 64 KB and 250 KB (each against the bare server with the same body).
 * Afterwards every delivery id answered 202 is looked up in the delivery log. Not part of
 * `npm test`: the targets are judged here, never asserted in tests (the machine is shared).
 *
 * `npm run bench -- ingress` (3 rounds of 5 s per target), `npm run bench -- ingress --quick`
 * (1 round of 2 s). `BENCH_CPU_PROF=<dir>` writes a CPU profile of the runtime's process there;
 * `BENCH_ROWS=<text>` measures only the rows whose label contains it, next to the bare rows of their sizes
 * (for a profile of one row; the targets are then not judged). `BENCH_THREADS=1` prints, after each
 * measured run, the CPU per answer of each thread of the target's process; `BENCH_PERF=1` starts the
 * runtime with `--perf-basic-prof`, so `perf record -g -p <pid>` names its JavaScript functions.
 */

import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from '../cli/compiler/compile.ts';
import { parseConfig } from '../runtime/config.ts';
import { createLogger, turnDestination } from '../runtime/log.ts';
import type { CheckpointStats } from '../runtime/store/checkpointer.ts';
import { startServer } from '../runtime/server.ts';
import { freePort } from './serve.ts';
import { cpuMicros, runWrk, threadCpuMicros, type SignedBody, type WrkResult } from './wrk.ts';

/** The targets, each judged "met" or "NOT met" in the output. */
export const TARGETS = {
  /** One automation whose filter misses, against bare node:http: at least this share of its req/s ... */
  bareRatio: 0.5,
  /** ... and at most this many times its server CPU per request. */
  cpuRatio: 2,
  /** 2,000 automations on the webhook, against one: at least this share of the req/s. */
  scaleRatio: 0.8,
  /** One automation whose filter matches (a run per delivery), against bare node:http. */
  matchRatio: 0.35,
  /** The moonshot: one automation whose filter misses, against adnanh/webhook's rule miss (when installed). */
  webhookRatio: 1,
};

export const SECRET_NAME = 'bench-github';
export const SECRET = 'bench-github-secret';
const CONNECTIONS = 64;

/** The webhooks the runtime serves, each in a factory of its own: name → automations on it. */
const HOOKS = { one: 1, match: 1, hundred: 100, many: 2000 } as const;
export type HookName = keyof typeof HOOKS;

export const uidOf = (name: HookName) => `wh_bench${name.padEnd(21, 'a')}`;

/**
 * Filters that miss the bench's payloads (a push to refs/heads/main of octo/bench by `bench`),
 * in four shapes, each automation its own values: a top-level equality, a nested one, an `in`
 * list, and a list beside an `exists`.
 */
function missFilter(i: number): unknown {
  switch (i % 4) {
    case 0:
      return { ref: `refs/heads/feature-${i}` };
    case 1:
      return { repository: { full_name: `octo/repo-${i}` } };
    case 2:
      return { pusher: { name: { in: [`user-${i}`, `bot-${i}`] } } };
    default:
      return { after: { exists: true }, ref: [`refs/tags/v${i}`, `refs/tags/r${i}`] };
  }
}

/** The factory repo of one bench webhook, as the compiler reads it. */
export function factoryFiles(hook: HookName): { path: string; text: string }[] {
  const files = [
    { path: 'factory.yaml', text: `name: bench-${hook}\n` },
    { path: `environments/bench-${hook}.yaml`, text: 'agent:\n  command: ["true"]\n' },
    { path: 'webhooks/github.yaml', text: `authMode: signature\nsignatureScheme: github\nsecretName: ${SECRET_NAME}\nuid: ${uidOf(hook)}\n` },
  ];
  for (let i = 0; i < HOOKS[hook]; i++) {
    const payload = hook === 'match' ? { ref: 'refs/heads/main', repository: { full_name: 'octo/bench' } } : missFilter(i);
    const front = {
      environment: `bench-${hook}`,
      triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [uidOf(hook)], payload } }],
    };
    files.push({ path: `automations/auto-${i}.md`, text: `---\n${JSON.stringify(front)}\n---\nHandle push ${i}: read event-payload.json.\n` });
  }
  return files;
}

/** A GitHub push payload of `size` bytes: commits until it is close, then padding. */
function pushPayload(size: number, variant: number): Buffer {
  const sha = () => randomBytes(20).toString('hex');
  const base = {
    ref: 'refs/heads/main',
    before: sha(),
    after: sha(),
    variant,
    repository: { full_name: 'octo/bench', private: false, default_branch: 'main' },
    pusher: { name: 'bench', email: 'bench@example.com' },
    commits: [] as unknown[],
    pad: '',
  };
  const commit = () => ({ id: sha(), message: 'Change things\n\n' + 'x'.repeat(800), author: { name: 'bench', email: 'bench@example.com' }, added: [], removed: [], modified: ['README.md'] });
  while (JSON.stringify(base).length + 1200 < size) base.commits.push(commit());
  base.pad = 'x'.repeat(Math.max(0, size - JSON.stringify(base).length));
  return Buffer.from(JSON.stringify(base));
}

/** `count` signed bodies of `size` bytes. */
export function signedBodies(size: number, count: number): SignedBody[] {
  return Array.from({ length: count }, (_, i) => {
    const body = pushPayload(size, i);
    return {
      body,
      headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'GitHub-Hookshot/bench',
        'X-GitHub-Event': 'push',
        'X-Hub-Signature-256': 'sha256=' + createHmac('sha256', SECRET).update(body).digest('hex'),
      },
    };
  });
}

// ---------------------------------------------------------------------------------------------
// The server processes.

type ToFactory = { verify: { uid: string; idsFile: string } } | { stop: true };
type FromServer = { ready: true; url: string } | { verified: { checked: number; missing: number; checkpoints?: CheckpointStats } } | { error: string };

/** The bare baseline: node:http reading the body, JSON.parse, 202 (400 when it is not JSON). */
async function bareMain(): Promise<void> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end('{"error":"invalid JSON"}');
        return;
      }
      res.writeHead(202, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end('{"delivery_id":"x"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.send!({ ready: true, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } satisfies FromServer);
  process.on('message', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

/** The runtime: started as `factory serve` starts it, then set up through its own HTTP API. */
async function factoryMain(dataDir: string): Promise<void> {
  const limits = { deliveriesPerMinute: 1_000_000_000, failedAuthPerMinute: 1_000_000_000, apiBodyBytes: 64 * 1024 * 1024 };
  const log = createLogger({ level: 'info', destination: turnDestination('/dev/null') });
  const server = await startServer(parseConfig({ port: 0, dataDir, logLevel: 'info', limits }, {}), { log });
  (server.services.executor as { pause?: () => void } | undefined)?.pause?.();
  const key = readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
  const api = async (method: string, route: string, body: unknown) => {
    const res = await fetch(server.url + route, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
  };
  await api('POST', '/api/v1/secrets', { name: SECRET_NAME, value: SECRET });
  for (const hook of Object.keys(HOOKS) as HookName[]) {
    const { snapshot, diagnostics } = compile(factoryFiles(hook));
    if (!snapshot) throw new Error(`bench factory ${hook} does not compile: ${JSON.stringify(diagnostics)}`);
    await api('POST', `/api/v1/factories/bench-${hook}/apply`, { snapshot });
  }
  process.on('message', (m: ToFactory) => {
    if ('stop' in m) {
      void server.close().then(() => process.exit(0));
      return;
    }
    // Every id answered 202 has an Accepted entry with its payload.
    const ids = readFileSync(m.verify.idsFile, 'utf8').split('\n').filter(Boolean);
    let missing = 0;
    for (const id of ids) {
      const entry = server.store.deliveries.get(m.verify.uid, id);
      if (!entry || entry.outcome !== 'accepted' || !entry.hasPayload) missing += 1;
    }
    process.send!({ verified: { checked: ids.length, missing, checkpoints: server.store.checkpointer?.counts } } satisfies FromServer);
  });
  process.send!({ ready: true, url: server.url } satisfies FromServer);
}

/** The path of `name` on PATH, if it is there and executable. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this one
    }
  }
  return undefined;
}

/** What adnanh/webhook answers when a hook's trigger rule is not satisfied (its default, a 200). */
const WEBHOOK_MISS = { status: 200, body: 'Hook rules were not satisfied.' };

/**
 * adnanh/webhook's hooks file: one hook that verifies the GitHub signature over the body
 * (`X-Hub-Signature-256`, the bench's secret) and then misses (the bench never pushes to that
 * branch), as the runtime's 1-automation row verifies and misses. Its command never runs.
 */
export function webhookHooks(): unknown[] {
  return [
    {
      id: 'bench',
      'execute-command': '/bin/true',
      'trigger-rule': {
        and: [
          { match: { type: 'payload-hmac-sha256', secret: SECRET, parameter: { source: 'header', name: 'X-Hub-Signature-256' } } },
          { match: { type: 'value', value: 'refs/heads/never-pushed', parameter: { source: 'payload', name: 'ref' } } },
        ],
      },
    },
  ];
}

/** Starts `webhook` (adnanh/webhook, at `bin`) on a free port of 127.0.0.1; resolves once it accepts connections. */
async function startWebhook(bin: string, scratch: string): Promise<{ pid: number; url: string; version: string; stop(): Promise<void> }> {
  const version = execFileSync(bin, ['-version'], { encoding: 'utf8' }).trim().replace(/^webhook version /, '');
  const hooksFile = path.join(scratch, 'hooks.json');
  writeFileSync(hooksFile, JSON.stringify(webhookHooks()));
  const port = await freePort();
  // Without -verbose it logs nothing, as the runtime's access log goes to /dev/null.
  const child = spawn(bin, ['-hooks', hooksFile, '-ip', '127.0.0.1', '-port', String(port)], { stdio: ['ignore', 'ignore', 'inherit'] });
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  child.once('error', () => undefined); // an exit follows
  const stop = async () => {
    if (exitCode === undefined) child.kill('SIGTERM');
    await exited;
  };
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
  for (let waited = 0; !(await accepts()); waited += 50) {
    if (exitCode !== undefined || waited > 10_000) {
      await stop();
      throw new Error(`webhook did not start on port ${port} (${exitCode !== undefined ? `exited with ${exitCode}` : 'no answer in 10 s'})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { pid: child.pid!, url: `http://127.0.0.1:${port}`, version, stop };
}

interface ServerProcess {
  pid: number;
  url: string;
  ask(message: ToFactory): Promise<FromServer>;
  stop(): Promise<void>;
}

async function startProcess(args: string[], profileDir?: string): Promise<ServerProcess> {
  const execArgv = profileDir ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${profileDir}`] : process.env.BENCH_PERF ? [...process.execArgv, '--perf-basic-prof'] : process.execArgv;
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let early: ((code: number | null) => void) | undefined;
  const first = await new Promise<FromServer>((resolve, reject) => {
    child.once('message', (m: FromServer) => resolve(m));
    early = (code) => reject(new Error(`bench server ${args[0]} exited with ${code}`));
    child.once('exit', early);
  });
  child.off('exit', early!);
  if (!('ready' in first)) throw new Error(`bench server ${args[0]}: ${JSON.stringify(first)}`);
  return {
    pid: child.pid!,
    url: first.url,
    ask: (message) =>
      new Promise((resolve) => {
        child.once('message', (m: FromServer) => resolve(m));
        child.send(message);
      }),
    stop: async () => {
      child.send({ stop: true });
      await exited;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The measurement.

interface Row {
  label: string;
  target: 'bare' | 'factory' | 'webhook';
  hook?: HookName;
  size: number;
  runs: { result: WrkResult; cpuMicros: number }[];
}

/** The middle value; with an even count, the mean of the two middle ones. */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const perSecond = (row: Row) => median(row.runs.map((r) => r.result.accepted / r.result.seconds));
const cpuPerRequest = (row: Row) => row.runs.reduce((a, r) => a + r.cpuMicros, 0) / Math.max(1, row.runs.reduce((a, r) => a + r.result.responses, 0));

export async function benchIngress(print: (line: string) => void, opts: { quick?: boolean } = {}): Promise<void> {
  const rounds = opts.quick ? 1 : 3;
  const seconds = opts.quick ? 2 : 5;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'factory-bench-ingress-'));
  const dataDir = path.join(scratch, 'data');
  const bare = await startProcess(['--bare']);
  // BENCH_CPU_PROF=<dir>: the runtime's process writes a V8 CPU profile there when it stops.
  const factory = await startProcess(['--factory', dataDir], process.env.BENCH_CPU_PROF).catch(async (err) => {
    await bare.stop();
    throw err;
  });
  const webhookBin = onPath('webhook');
  const webhook = webhookBin
    ? await startWebhook(webhookBin, scratch).catch(async (err) => {
        await factory.stop();
        await bare.stop();
        throw err;
      })
    : undefined;
  try {
    const KB = 1024;
    const bodies = new Map<number, SignedBody[]>([
      [KB, signedBodies(KB, 8)],
      [64 * KB, signedBodies(64 * KB, 4)],
      [250 * KB, signedBodies(250 * KB, 2)],
    ]);
    const rows: Row[] = [
      { label: 'bare node:http, 1 KB', target: 'bare', size: KB, runs: [] },
      { label: 'factory, 1 automation, filter misses, 1 KB', target: 'factory', hook: 'one', size: KB, runs: [] },
      { label: 'factory, 1 automation, filter matches, 1 KB', target: 'factory', hook: 'match', size: KB, runs: [] },
      { label: 'factory, 100 automations, all miss, 1 KB', target: 'factory', hook: 'hundred', size: KB, runs: [] },
      { label: 'factory, 2,000 automations, all miss, 1 KB', target: 'factory', hook: 'many', size: KB, runs: [] },
      ...(webhook ? [{ label: `adnanh/webhook ${webhook.version}, rule misses, 1 KB`, target: 'webhook' as const, size: KB, runs: [] }] : []),
      { label: 'bare node:http, 64 KB', target: 'bare', size: 64 * KB, runs: [] },
      { label: 'factory, 1 automation, filter misses, 64 KB', target: 'factory', hook: 'one', size: 64 * KB, runs: [] },
      { label: 'bare node:http, 250 KB', target: 'bare', size: 250 * KB, runs: [] },
      { label: 'factory, 1 automation, filter misses, 250 KB', target: 'factory', hook: 'one', size: 250 * KB, runs: [] },
    ];
    // BENCH_ROWS=<text>: only the rows whose label contains it, and the bare rows of their body sizes.
    const only = process.env.BENCH_ROWS;
    if (only) {
      const sizes = new Set(rows.filter((row) => row.label.includes(only)).map((row) => row.size));
      rows.splice(0, rows.length, ...rows.filter((row) => row.label.includes(only) || (row.target === 'bare' && sizes.has(row.size))));
    }
    let runNumber = 0;
    const byThread = process.env.BENCH_THREADS === '1';
    const measure = async (row: Row, secs: number) => {
      const server = row.target === 'bare' ? bare : row.target === 'factory' ? factory : webhook!;
      const url =
        row.target === 'bare' ? `${bare.url}/webhooks/w/bare` : row.target === 'factory' ? `${factory.url}/webhooks/w/${uidOf(row.hook!)}` : `${webhook!.url}/hooks/bench`;
      const dir = mkdtempSync(path.join(scratch, 'wrk-'));
      const expect = row.target === 'webhook' ? { expectStatus: WEBHOOK_MISS.status, expectBody: WEBHOOK_MISS.body } : {};
      const target = { url, bodies: bodies.get(row.size)!, idHeader: 'X-GitHub-Delivery', idPrefix: `r${++runNumber}`, collectIds: row.target === 'factory', ...expect };
      const before = cpuMicros(server.pid);
      const threadsBefore = byThread ? threadCpuMicros(server.pid) : undefined;
      const result = await runWrk(dir, target, { seconds: secs, connections: CONNECTIONS });
      const cpu = cpuMicros(server.pid) - before;
      if (threadsBefore && secs > 1) {
        // BENCH_THREADS=1: where the row's CPU went, by thread (µs per answer), threads that spent under 1 µs left out.
        const parts: string[] = [];
        for (const [tid, now] of threadCpuMicros(server.pid)) {
          const perRequest = (now.micros - (threadsBefore.get(tid)?.micros ?? 0)) / Math.max(1, result.responses);
          if (perRequest >= 1) parts.push(`${now.name}[${tid}] ${perRequest.toFixed(0)}`);
        }
        print(`  threads, ${row.label}: ${parts.join(', ')} µs/req`);
      }
      return { result, cpuMicros: cpu };
    };

    // Warm-up (JIT, statement caches, the definitions index), not counted.
    for (const row of rows) await measure(row, 1);
    for (let r = 0; r < rounds; r++) {
      for (const row of rows) row.runs.push(await measure(row, seconds));
    }

    // Every 202 is in the log.
    let checked = 0;
    let missing = 0;
    let checkpoints: CheckpointStats | undefined;
    for (const row of rows) {
      if (row.target !== 'factory') continue;
      const ids = row.runs.flatMap((r) => r.result.ids);
      const idsFile = path.join(scratch, `ids-${checked}.txt`);
      writeFileSync(idsFile, ids.join('\n'));
      const answer = await factory.ask({ verify: { uid: uidOf(row.hook!), idsFile } });
      if (!('verified' in answer)) throw new Error(`verify: ${JSON.stringify(answer)}`);
      checked += answer.verified.checked;
      missing += answer.verified.missing;
      checkpoints = answer.verified.checkpoints;
    }
    const failed = rows.reduce((a, row) => a + row.runs.reduce((b, r) => b + r.result.failed, 0), 0);

    print(`ingress: wrk -t1 -c${CONNECTIONS}, ${rounds} round(s) of ${seconds} s per row, rows alternating; GitHub-signed push deliveries, each with a unique, random delivery id`);
    print(`  req/s: answers as expected per second (202; adnanh/webhook: ${WEBHOOK_MISS.status} "${WEBHOOK_MISS.body}"), median of the rounds`);
    print(`  ${'row'.padEnd(46)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'CPU µs/req'.padStart(11)}   vs bare (same body)`);
    const bareOf = (size: number) => rows.find((x) => x.target === 'bare' && x.size === size)!;
    for (const row of rows) {
      const rps = perSecond(row);
      const p50 = median(row.runs.map((r) => r.result.p50Ms));
      const p99 = median(row.runs.map((r) => r.result.p99Ms));
      const cpu = cpuPerRequest(row);
      const b = bareOf(row.size);
      const vs = row.target === 'bare' ? '' : `${(rps / perSecond(b)).toFixed(2)}× req/s, ${(cpu / cpuPerRequest(b)).toFixed(2)}× CPU`;
      print(`  ${row.label.padEnd(46)} ${rps.toFixed(0).padStart(7)} ${p50.toFixed(2).padStart(7)} ${p99.toFixed(2).padStart(7)} ${cpu.toFixed(0).padStart(11)}   ${vs}`);
    }

    if (only) {
      print(`  targets: not judged (BENCH_ROWS left rows out)`);
      return;
    }
    const one = rows[1];
    const oneRatio = perSecond(one) / perSecond(rows[0]);
    const cpuRatio = cpuPerRequest(one) / cpuPerRequest(rows[0]);
    const scale = perSecond(rows[4]) / perSecond(one);
    const match = perSecond(rows[2]) / perSecond(rows[0]);
    const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
    print('  targets:');
    print(`    1 automation (miss) vs bare, req/s        ${oneRatio.toFixed(2)} (≥ ${TARGETS.bareRatio}: ${verdict(oneRatio >= TARGETS.bareRatio)})`);
    print(`    1 automation (miss) vs bare, CPU/request  ${cpuRatio.toFixed(2)} (≤ ${TARGETS.cpuRatio}: ${verdict(cpuRatio <= TARGETS.cpuRatio)})`);
    print(`    2,000 automations vs 1, req/s             ${scale.toFixed(2)} (≥ ${TARGETS.scaleRatio}: ${verdict(scale >= TARGETS.scaleRatio)})`);
    print(`    1 automation (match) vs bare, req/s       ${match.toFixed(2)} (≥ ${TARGETS.matchRatio}: ${verdict(match >= TARGETS.matchRatio)})`);
    print(`    every 202 in the log                      ${checked - missing}/${checked} (${verdict(missing === 0 && checked > 0)})${failed ? `; ${failed} answers were not as expected` : ''}`);
    for (const row of rows) {
      const first = row.runs.flatMap((r) => r.result.firstFailures);
      if (first.length > 0) print(`      ${row.label}: first unexpected answer: ${first[0]}`);
    }
    // The WAL's checkpoints over the whole run (docs/runtime.md#checkpoints): who copied, and how big the WAL got.
    print(
      checkpoints
        ? `  checkpoints: ${checkpoints.thread} by the thread (the WAL at most ${checkpoints.maxLog} pages when it ran); ${checkpoints.main} WAL restarts by the main connection, copying ${checkpoints.mainFrames} pages in all; ${checkpoints.forced} at the hard bound; the WAL file at most ${(checkpoints.maxFileBytes / 2 ** 20).toFixed(1)} MiB`
        : '  checkpoints: no checkpoint thread (it fell back to the main connection; see the runtime log)',
    );
    const webhookRow = rows.find((row) => row.target === 'webhook');
    if (webhookRow) {
      const moon = perSecond(one) / perSecond(webhookRow);
      const moonCpu = cpuPerRequest(one) / cpuPerRequest(webhookRow);
      print(`    moonshot: 1 automation (miss) vs webhook  ${moon.toFixed(2)} (≥ ${TARGETS.webhookRatio.toFixed(1)}: ${verdict(moon >= TARGETS.webhookRatio)}); CPU/request ${moonCpu.toFixed(2)}×`);
    } else {
      print('    moonshot: adnanh/webhook row skipped: `webhook` is not on PATH (install it: sudo apt-get install webhook)');
    }
  } finally {
    await webhook?.stop();
    await factory.stop();
    await bare.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--bare') await bareMain();
  else if (process.argv[2] === '--factory') await factoryMain(process.argv[3]);
  else await benchIngress((line) => console.log(line), { quick: process.argv.includes('--quick') });
}
