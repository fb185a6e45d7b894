import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCli, terminalEnv } from './helpers.ts';

/**
 * The README's tour as a user runs it, with real processes: `factory dev examples/factory` in one
 * "terminal", the CLI in another with no key flag (it finds ./.factory/admin.key), a delivery that
 * starts a run, then the runtime stopped and started again (`factory serve` on the same data dir):
 * everything is still there and the second start makes no new admin key. Waits are for output or
 * for a state, never for a fixed time.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'factory.js');
const EXAMPLE = join(ROOT, 'examples', 'factory');
const CI_UID = 'wh_examplecibuilds2345abcdefg';
const cwd = mkdtempSync(join(tmpdir(), 'factory-tour-'));
const children: ChildProcessWithoutNullStreams[] = [];

after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(cwd, { recursive: true, force: true });
});


/** Starts a long-running command; `until` resolves once its stdout matches. */
function start(args: string[]) {
  const p = startCli(args, { cwd });
  children.push(p.child);
  const until = async (re: RegExp): Promise<RegExpExecArray> => {
    let m: RegExpExecArray | null = null;
    await p.waitFor(() => (m = re.exec(p.stdout())) !== null, `${re}`);
    return m!;
  };
  return { child: p.child, until, exited: p.exited, output: p.stdout };
}

/** Runs one CLI command to its end, as from a second terminal. */
function factory(server: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: terminalEnv({ FACTORY_SERVER: server }) });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function ok(server: string, ...args: string[]): Promise<string> {
  const r = await factory(server, ...args);
  assert.equal(r.code, 0, `factory ${args.join(' ')}: ${r.stderr}`);
  assert.equal(r.stderr, '', `factory ${args.join(' ')} printed to stderr`);
  return r.stdout;
}

test('the README tour: dev, the CLI with no flags, a delivery that starts a run, and a restart that keeps everything', async () => {
  const dev = start(['dev', EXAMPLE, '--port', '0', '--data-dir', '.factory']);
  const server = (await dev.until(/listening on (http:\/\/\S+)/))[1];
  await dev.until(/Webhooks:/);
  const ciToken = (await dev.until(/ci-webhook-token = (\S+)\n/))[1];

  // Second terminal: no --api-key, no FACTORY_API_KEY; the key comes from ./.factory/admin.key.
  const webhooks = await ok(server, 'webhook', 'list');
  for (const name of ['alerts', 'ci', 'github']) assert.match(webhooks, new RegExp(`^example\\s+${name}\\s+wh_\\w+\\s+\\S+\\s+enabled`, 'm'));
  assert.ok(webhooks.includes(`${server}/webhooks/w/${CI_UID}`), webhooks);
  const plan = await factory(server, 'plan', EXAMPLE, '--detailed-exitcode');
  assert.equal(plan.code, 0, plan.stderr);
  assert.match(plan.stdout, /No changes\./);

  // The curl of the tour: a failed build on main matches the ci-failure automation.
  const res = await fetch(`${server}/webhooks/w/${CI_UID}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ciToken}`, 'X-CI-Build-Id': 'build-42', 'Content-Type': 'application/json' },
    body: '{"status":"failed","branch":"main","pipeline":"build"}',
  });
  assert.equal(res.status, 202);
  assert.deepEqual(await res.json(), { delivery_id: 'build-42' });
  const deliveries = JSON.parse(await ok(server, 'delivery', 'list', 'ci', '--json')) as { delivery_id: string; outcome_label: string; runs: { run_id: string }[] }[];
  const delivery = deliveries.find((d) => d.delivery_id === 'build-42');
  assert.equal(delivery?.outcome_label, 'Accepted');
  assert.equal(delivery.runs.length, 1);
  const runId = delivery.runs[0].run_id;
  const trigger = await ok(server, 'automation', 'test', 'ci-failure', '--delivery', 'build-42');
  assert.match(trigger, /Would trigger/);

  // Wait for the webhook run to finish (the scripted agent), polling its state through the CLI.
  let run: { state: string; source: string; automation: string };
  do run = JSON.parse(await ok(server, 'run', 'get', runId, '--json')) as typeof run;
  while (run.state === 'QUEUED' || run.state === 'INPROGRESS');
  assert.equal(run.state, 'SUCCEEDED');
  assert.equal(run.source, 'WEBHOOK');
  assert.equal(run.automation, 'ci-failure');
  const transcript = await ok(server, 'run', 'transcript', runId);
  assert.match(transcript, /event-payload\.json/);

  const secretsBefore = await ok(server, 'secret', 'list');
  const runsBefore = await ok(server, 'run', 'list', '--json');

  dev.child.kill('SIGTERM');
  assert.equal(await dev.exited, 0);

  // A restart: plain `factory serve` on the same ./.factory.
  const serve = start(['serve', '--port', '0']);
  const server2 = (await serve.until(/listening on (http:\/\/\S+)/))[1];
  await serve.until(/admin key: /);
  assert.doesNotMatch(serve.output(), /created now/);
  const keys = JSON.parse(await ok(server2, 'key', 'list', '--json')) as { kind: string }[];
  assert.equal(keys.length, 1, 'no second admin key');
  assert.equal((await ok(server2, 'webhook', 'list')).replaceAll(server2, 'URL'), webhooks.replaceAll(server, 'URL'));
  assert.equal(await ok(server2, 'secret', 'list'), secretsBefore);
  const runsAfter = await ok(server2, 'run', 'list', '--json');
  assert.equal(runsAfter.replaceAll(server2, 'URL'), runsBefore.replaceAll(server, 'URL'));
  assert.equal((JSON.parse(runsAfter) as { runs: unknown[] }).runs.length, 1);
  const after = JSON.parse(await ok(server2, 'delivery', 'show', 'ci', 'build-42', '--json')) as { outcome_label: string; payload: unknown };
  assert.equal(after.outcome_label, 'Accepted');
  assert.deepEqual(after.payload, { status: 'failed', branch: 'main', pipeline: 'build' });
  const replan = await factory(server2, 'plan', EXAMPLE, '--detailed-exitcode');
  assert.equal(replan.code, 0, replan.stderr);
  // The same token still opens the same webhook, and the same delivery id is still a Duplicate.
  const again = await fetch(`${server2}/webhooks/w/${CI_UID}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ciToken}`, 'X-CI-Build-Id': 'build-42' },
    body: '{"status":"failed","branch":"main","pipeline":"build"}',
  });
  assert.equal(again.status, 202);
  const log = JSON.parse(await ok(server2, 'delivery', 'list', 'ci', '--json')) as typeof deliveries;
  assert.deepEqual(log.map((d) => [d.delivery_id, d.outcome_label, d.runs.length]), [['build-42', 'Duplicate', 0], ['build-42', 'Accepted', 1]]);

  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
});
