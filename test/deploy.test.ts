import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { startCli, terminalEnv, type RunningCli } from './helpers/cli.ts';
import { eventually } from './helpers/eventually.ts';
import { sectionOf, shellLines, terminal } from './helpers/terminal.ts';
import { postgresUrl } from './helpers/postgres.ts';
import { testExecutor } from './runtime/executor/helpers.ts';

/**
 * docs/deploy.md's complete deployment, as written: two replicas of `factory serve` on one
 * PostgreSQL database and two `factory worker`s, each a real process. The shell block is read from
 * the doc; its lines run in one real bash, except the daemons (lines ending in `&`), which the test
 * starts itself from the arguments bash expands, so that it can wait for them and kill them. The
 * only substitutions: the database URL (a schema of its own), the two ports (free ones), a lease of
 * 6 seconds instead of 30 (so a dead worker's run ends sooner; a worker beats every 2 seconds, so a
 * live run's lease still outlives two missed beats, the margin its runs need on a loaded 2-core
 * machine while their clones compete with everything else), and --executor direct on a machine
 * without a working sandbox. Then the checks the doc lists, against both replicas at once.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url)).replace(/\/$/, '');
const DOC = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
const CI_UID = 'wh_examplecibuilds2345abcdefg';
const GITHUB_UID = 'wh_examplegithub2345abcdefghi';
const ALERTS_UID = 'wh_examplealerts2345abcdefghi';

const cwd = mkdtempSync(join(tmpdir(), 'factory-deploy-'));
const children: ChildProcessWithoutNullStreams[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(cwd, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

interface Delivery {
  status: number;
  body: string;
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<Delivery> {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: res.status, body: await res.text() };
}

test('the deployment of docs/deploy.md: two replicas and two workers on one PostgreSQL database', async (t) => {
  const databaseUrl = await postgresUrl(t);
  if (databaseUrl === undefined) return;
  const executor = testExecutor();

  // A checkout as the reader has it: bin/ is this project's, examples/ a copy whose sandbox
  // environment clones this project by absolute path.
  symlinkSync(join(ROOT, 'bin'), join(cwd, 'bin'));
  cpSync(join(ROOT, 'examples'), join(cwd, 'examples'), { recursive: true });
  const sandbox = join(cwd, 'examples', 'factory', 'environments', 'sandbox.yaml');
  writeFileSync(sandbox, readFileSync(sandbox, 'utf8').replace('url: ../..', `url: ${ROOT}`));

  const ports = [await freePort(), await freePort()];
  const substitute = (line: string) =>
    line
      .replace("'postgres://postgres@127.0.0.1:5432/factory'", `'${databaseUrl}'`)
      .replaceAll('127.0.0.1:8081', `127.0.0.1:${ports[0]}`)
      .replaceAll('127.0.0.1:8082', `127.0.0.1:${ports[1]}`)
      .replace('--port 8081', `--port ${ports[0]}`)
      .replace('--port 8082', `--port ${ports[1]}`)
      // The checkout the example clones is this project (above), which "$PWD" stands for in the doc.
      .replaceAll('--local-repos "$PWD"', `--local-repos ${ROOT}`);

  const sh = terminal(cwd, terminalEnv());
  children.push(sh.child);
  const daemons = new Map<string, RunningCli>();
  const workersStarting: Promise<void>[] = [];
  const commands = shellLines(sectionOf(DOC, '## A complete deployment'));
  assert.ok(commands.length >= 10, commands.join('\n'));
  for (const line of commands.map(substitute)) {
    if (!line.endsWith('&')) {
      const step = await sh.run(line);
      assert.equal(step.code, 0, `${line}\n${step.out}\n${step.err}`);
      continue;
    }
    // A daemon: bash expands its arguments and gives its environment (with the line's own
    // NAME="..." assignments in front); the test starts it.
    const daemon = /^((?:[A-Z_][A-Z0-9_]*="[^"]*" )*)factory (serve|worker) /.exec(line.slice(0, -1).trim());
    assert.ok(daemon, line);
    const words = line.slice(0, -1).trim().slice(daemon[1].length);
    const expanded = await sh.run(`printf '%s\\n' ${words.slice('factory '.length)}`);
    const args = expanded.out.split('\n').filter(Boolean);
    const envLines = (await sh.run('env')).out.split('\n').filter((l) => l.startsWith('FACTORY_'));
    const env: Record<string, string> = { ...terminalEnv(), FACTORY_LEASE_SECONDS: '6' };
    for (const l of envLines) env[l.slice(0, l.indexOf('='))] = l.slice(l.indexOf('=') + 1);
    for (const [, name, quoted] of daemon[1].matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*")/g)) env[name] = (await sh.run(`printf %s ${quoted}`)).out;
    // Keys are given in the environment, never on a command line any user may read.
    assert.ok(!args.some((a) => a.startsWith('fk_')), `a key on the command line: ${line}`);
    const extra = executor === 'direct' ? ['--executor', 'direct'] : [];
    const child = startCli([...args, ...extra], { cwd, env });
    children.push(child.child);
    const name = args[0] === 'serve' ? `replica-${daemons.size + 1}` : args[args.indexOf('--name') + 1];
    daemons.set(name, child);
    const started = child.waitFor(() => /factory runtime listening on|factory worker \S+ executing runs/.test(child.stdout()), `${name} to start`);
    // A replica listens before the next line runs, as the doc asks; the workers start side by side.
    if (args[0] === 'serve') await started;
    else workersStarting.push(started), started.catch(() => {});
  }
  await Promise.all(workersStarting);
  assert.deepEqual([...daemons.keys()], ['replica-1', 'replica-2', 'worker-1', 'worker-2']);
  // One admin key for the database, in the data dir of the replica that created it.
  assert.match(daemons.get('replica-1')!.stdout(), /^admin key: .*replica-1\/admin\.key \(created now; keep it safe\)$/m);
  assert.match(daemons.get('replica-2')!.stdout(), /^admin key: not in this data dir; the replica that first opened the database wrote it to its own/m);
  assert.equal(existsSync(join(cwd, 'replica-2', 'admin.key')), false);
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const value = async (name: string) => (await sh.run(`printf %s "$${name}"`)).out;
  const adminKey = readFileSync(join(cwd, 'replica-1', 'admin.key'), 'utf8').trim();
  const api = async (replica: number, path: string, init: RequestInit = {}) => {
    const res = await fetch(`${urls[replica]}${path}`, { ...init, headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', ...init.headers } });
    return { status: res.status, body: (await res.json()) as any };
  };
  const logOf = async (uid: string) => {
    const all: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const { body } = await api(0, `/api/v1/webhooks/${uid}/deliveries?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...body.deliveries);
      cursor = body.page_info.next_cursor;
    } while (cursor);
    return all;
  };
  const ciToken = await value('CI_TOKEN');
  assert.match(ciToken, /^[0-9a-f]{64}$/);
  const ci = (replica: number, id: string, status: string, token = ciToken) =>
    post(`${urls[replica]}/webhooks/w/${CI_UID}`, JSON.stringify({ status, branch: 'main', pipeline: 'build' }), { authorization: `Bearer ${token}`, 'x-ci-build-id': id });

  // Both replicas answer /readyz with the database they share.
  for (const url of urls) assert.deepEqual(await (await fetch(`${url}/readyz`)).json(), { status: 'ok', database: { engine: 'postgres', reachable: true } });

  await t.test('twenty copies of one delivery, sent to both replicas at once, are Accepted once', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => ci(i % 2, 'dup-1', 'passed')));
    assert.deepEqual(answers.map((a) => a.status), Array(20).fill(202));
    const entries = (await logOf(CI_UID)).filter((d) => d.delivery_id === 'dup-1');
    assert.equal(entries.filter((d) => d.outcome === 'accepted').length, 1);
    assert.equal(entries.filter((d) => d.outcome === 'duplicate').length, 19);
  });

  await t.test('deliveries spread across the replicas start runs that the workers execute to SUCCEEDED', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await ci(i % 2, `build-${i}`, 'failed')).status, 202);
    const runs = await eventually(
      async () => (await api(1, `/api/v1/agent/runs?limit=100`)).body.runs.filter((r: any) => r.source === 'WEBHOOK'),
      'the four runs',
      { until: (rs: any[]) => rs.length >= 4 },
    );
    const ids: string[] = runs.map((r: any) => r.run_id);
    assert.equal(ids.length, 4);
    const done = await eventually(
      async () => Promise.all(ids.map(async (id) => (await api(0, `/api/v1/agent/runs/${id}`)).body)),
      'the runs to end',
      { until: (rs) => rs.every((r) => ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(r.state)), tries: 2400 },
    );
    const workerLog = [...daemons.entries()].map(([n, d]) => `--- ${n}\n${d.stdout()}${d.stderr()}`).join('\n');
    assert.deepEqual(done.map((r) => r.state), ['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'], `${JSON.stringify(done.map((r) => r.status_message))}\n${workerLog}`);
    const workerOut = daemons.get('worker-1')!.stdout() + daemons.get('worker-2')!.stdout();
    for (const id of ids) {
      assert.match(workerOut, new RegExp(`started ${id} `), `${id} ran on a worker`);
      const transcript = await fetch(`${urls[1]}/api/v1/agent/runs/${id}/transcript`, { headers: { authorization: `Bearer ${adminKey}` } });
      assert.equal(transcript.status, 200);
      assert.match(await transcript.text(), /event-payload\.json/);
    }
  });

  // A worker killed with SIGKILL mid-run (checked in the last subtest): its run's lease runs out
  // while the next checks go on. A factory of the test's own with an environment whose agent waits,
  // so the run is still in progress when its worker dies.
  const slow = join(cwd, 'slow');
  mkdirSync(join(slow, 'environments'), { recursive: true });
  writeFileSync(join(slow, 'factory.yaml'), 'name: slow\n');
  writeFileSync(join(slow, 'environments', 'slow.yaml'), 'agent:\n  command: ["sh", "-c", "echo waiting; exec sleep 300"]\n  format: text\n  timeout: 10m\n');
  const applied = await sh.run('factory apply slow');
  assert.equal(applied.code, 0, applied.err);
  const created = await api(0, '/api/v1/agent/runs', { method: 'POST', body: JSON.stringify({ prompt: 'wait', config: { environment_id: 'slow' } }) });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const runId: string = created.body.run_id;
  // Either worker may take it; the one that does is killed.
  const workers = [daemons.get('worker-1')!, daemons.get('worker-2')!];
  const taken = () => workers.find((w) => w.stdout().includes(`started ${runId}`));
  await Promise.race(workers.map((w) => w.waitFor(() => taken() !== undefined, 'a worker to start the run')));
  const worker = taken()!;
  await eventually(async () => (await api(0, `/api/v1/agent/runs/${runId}`)).body.state, 'the run in progress', { until: (s) => s === 'INPROGRESS' });
  worker.child.kill('SIGKILL');
  await worker.exited;
  const workerLost = eventually(async () => (await api(0, `/api/v1/agent/runs/${runId}`)).body, 'the run to end', { until: (r) => r.state !== 'INPROGRESS' });
  // Awaited by the last subtest.
  workerLost.catch(() => {});

  await t.test('a sender spread across both replicas gets 429 after 60 deliveries in a minute', async () => {
    const alertsToken = await value('ALERTS_TOKEN');
    const answers: Delivery[] = [];
    for (let i = 0; i < 61; i++) {
      answers.push(await post(`${urls[i % 2]}/webhooks/w/${ALERTS_UID}/${alertsToken}`, JSON.stringify({ n: i }), {}));
    }
    const statuses = answers.map((a) => a.status);
    assert.deepEqual(statuses.slice(0, 60), Array(60).fill(202));
    assert.equal(statuses[60], 429);
    assert.equal((JSON.parse(answers[60].body) as { code: string }).code, 'rate_limited');
  });

  await t.test('a secret rotated through one replica is refused by the other', async () => {
    const fresh = 'b'.repeat(64);
    const step = await sh.run(`printf %s ${fresh} | factory secret update ci-webhook-token --grace 0`);
    assert.equal(step.code, 0, step.err);
    const started = Date.now();
    await eventually(async () => (await ci(1, `old-${Date.now()}`, 'passed')).status, 'replica 2 to refuse the old token', { until: (s) => s === 401, everyMs: 20 });
    t.diagnostic(`replica 2 refused the old token ${Date.now() - started} ms after the rotation through replica 1`);
    assert.equal((await ci(1, 'new-1', 'passed', fresh)).status, 202);
  });

  await t.test('a replica killed with SIGKILL while deliveries stream in loses none it acknowledged', async () => {
    const secret = await value('GITHUB_SECRET');
    const replica2 = daemons.get('replica-2')!;
    const acked: string[] = [];
    let killed = false;
    let n = 0;
    const sender = async () => {
      while (n < 55) {
        const id = `load-${n++}`;
        const body = JSON.stringify({ zen: id });
        try {
          const r = await post(`${urls[1]}/webhooks/w/${GITHUB_UID}`, body, {
            'x-github-event': 'ping',
            'x-github-delivery': id,
            'x-hub-signature-256': await sign(secret, body),
          });
          assert.equal(r.status, 202, r.body);
          acked.push(id);
        } catch (err) {
          if (!killed) throw err;
          return;
        }
        if (acked.length >= 15 && !killed) {
          killed = true;
          replica2.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    await replica2.exited;
    assert.equal(replica2.child.signalCode, 'SIGKILL');
    const accepted = new Set((await logOf(GITHUB_UID)).filter((d) => d.outcome === 'accepted').map((d) => d.delivery_id));
    for (const id of acked) assert.ok(accepted.has(id), `${id} got a 202 from the killed replica but is not in the log`);
  });

  await t.test('a worker killed with SIGKILL mid-run leaves the run ERROR worker_lost once its lease expires', async () => {
    const ended = await workerLost;
    assert.equal(ended.state, 'ERROR');
    assert.equal(ended.error_code, 'worker_lost', JSON.stringify(ended));
  });
});
