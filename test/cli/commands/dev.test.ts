import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execCli, startCli, terminalEnv, type CliResult } from '../../helpers/cli.ts';

/**
 * `factory dev` as a user runs it: a child process serving on port 0 with a temp data dir, the
 * example repo copied so the test can edit it. Waits are for output, never for time.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'factory-dev-'));
let child: ChildProcessWithoutNullStreams | undefined;

after(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

test('dev serves, creates the missing secrets once, applies, re-applies on change and survives errors', async () => {
  const repo = join(tmp, 'repo');
  cpSync(join(ROOT, 'examples', 'factory'), repo, { recursive: true });
  // The example's `url: ../..` is this project relative to examples/factory; from the copy, name it outright.
  const sandbox = join(repo, 'environments', 'sandbox.yaml');
  writeFileSync(sandbox, readFileSync(sandbox, 'utf8').replace('url: ../..', `url: ${ROOT.replace(/\/$/, '')}`));
  const dev = startCli(['dev', 'repo', '--port', '0', '--data-dir', 'data'], { cwd: tmp });
  child = dev.child;
  const { waitFor, exited } = dev;
  const count = (re: RegExp) => (dev.stdout().match(re) ?? []).length;

  await waitFor(() => dev.stdout().includes('Webhooks:'), 'the first apply');
  const url = /listening on (http:\/\/\S+)/.exec(dev.stdout())![1];
  assert.match(dev.stdout(), /Development convenience: created these missing team secrets/);
  const alerts = /alerts-url-token = (\S+)/.exec(dev.stdout())![1];
  assert.match(alerts, /^[A-Za-z0-9_-]{43}$/);
  assert.match(dev.stdout(), /ci-webhook-token = [A-Za-z0-9_-]{43}\n/);
  assert.match(dev.stdout(), /Applied factory example: 9 created/);
  assert.ok(dev.stdout().includes(`${url}/webhooks/w/wh_examplealerts2345abcdefghi/{token}`));

  // The admin key it wrote lets a second terminal list the webhooks.
  const key = readFileSync(join(tmp, 'data', 'admin.key'), 'utf8').trim();
  const list = (await (await fetch(`${url}/api/v1/webhooks`, { headers: { Authorization: `Bearer ${key}` } })).json()) as { webhooks: { name: string }[] };
  assert.deepEqual(list.webhooks.map((w) => w.name), ['alerts', 'ci', 'github']);

  // The activity feed: one short line per delivery and run, never a JSON line, never the token.
  const alertsUrl = `${url}/webhooks/w/wh_examplealerts2345abcdefghi`;
  const firing = JSON.stringify({ status: 'firing', labels: { severity: 'critical' } });
  assert.equal((await fetch(`${alertsUrl}/${alerts}`, { method: 'POST', body: firing, headers: { 'X-Service-Delivery-Id': 'alert-1' } })).status, 202);
  assert.equal((await fetch(`${alertsUrl}/wrong-token`, { method: 'POST', body: '{}', headers: { 'X-Service-Delivery-Id': 'alert-2' } })).status, 401);
  // Waits for the run to end either way, so a run that fails is reported with its line instead of a hang.
  await waitFor(() => /run run_\w+ (SUCCEEDED|FAILED|ERROR|CANCELLED)/.test(dev.stdout()) && dev.stdout().includes('alert-2'), 'the activity lines');
  assert.match(dev.stdout(), /run run_\w+ SUCCEEDED/, 'the alert run succeeds');
  assert.match(dev.stdout(), /^\d\d:\d\d:\d\d {2}delivery alert-1 to \/webhooks\/w\/wh_examplealerts2345abcdefghi\/\[REDACTED\]: 202 Accepted \(\d+ ms\)$/m);
  assert.match(dev.stdout(), /^\d\d:\d\d:\d\d {2}run run_\w+ started \(automation alerts, environment sandbox\)$/m);
  assert.match(dev.stdout(), /^\d\d:\d\d:\d\d {2}delivery alert-2 to \/webhooks\/w\/wh_examplealerts2345abcdefghi\/\[REDACTED\]: 401 Rejected \(auth\): bad_credentials \(\d+ ms\)$/m);
  assert.ok(!dev.stdout().includes('wrong-token'));
  assert.equal(dev.stdout().split(alerts).length, 2, 'the token appears once: where it was created');
  assert.doesNotMatch(dev.stdout(), /^\{/m, 'no JSON log lines');

  const ci = join(repo, 'webhooks', 'ci.yaml');
  writeFileSync(ci, readFileSync(ci, 'utf8').replace('Build results from the CI system', 'CI builds'));
  await waitFor(() => count(/^Applied factory example/gm) === 2, 'the re-apply');
  assert.match(dev.stdout(), /~ webhook ci +update +webhooks\/ci\.yaml\n +description: "Build results from the CI system" -> "CI builds"/);

  writeFileSync(ci, 'authMode: nope\n');
  await waitFor(() => dev.stderr().includes('Not applied'), 'the diagnostics');
  assert.match(dev.stderr(), /repo\/webhooks\/ci\.yaml:1:\d+: error webhook\./);
  assert.equal(child.exitCode, null, 'still running');

  // Secrets are created once: nothing is printed again, and no value shows up twice.
  assert.equal(count(/Development convenience/g), 1);
  child.kill('SIGTERM');
  assert.equal(await exited, 0, dev.stderr());
  assert.match(dev.stdout(), /Stopping/);
});

/** Runs bin/factory.js to its end; a child still running after `limitMs` is killed and reported. */
function runToEnd(args: string[], cwd: string, limitMs = 20_000): Promise<CliResult> {
  // limitMs is not a timed assertion: a safety net so a regression (serving forever) fails instead of hanging.
  return execCli(args, { cwd, env: terminalEnv({ FACTORY_API_KEY: 'fk_unused' }), limitMs });
}

for (const [label, dir, sentence] of [
  ['a directory that does not exist', 'nonexistent', /^error: nonexistent does not exist\n$/],
  ['a directory without factory.yaml', 'empty', /^error: empty has no factory\.yaml, so it is not a factory repo\n$/],
] as const) {
  test(`dev and watch refuse ${label} before starting anything: one sentence, exit 1`, async () => {
    const cwd = mkdtempSync(join(tmp, 'bad-'));
    mkdirSync(join(cwd, 'empty'));
    const dev = await runToEnd(['dev', dir, '--port', '0', '--data-dir', 'data'], cwd);
    assert.equal(dev.killed, false, `dev kept running:\n${dev.stdout}${dev.stderr}`);
    assert.equal(dev.code, 1);
    assert.match(dev.stderr, sentence);
    assert.equal(dev.stdout, '', 'no server started, so nothing listening was announced');
    assert.equal(existsSync(join(cwd, 'data')), false, 'the runtime never started (no data dir, no admin key)');

    const watch = await runToEnd(['watch', dir, '--server', 'http://127.0.0.1:9'], cwd);
    assert.equal(watch.killed, false, `watch kept running:\n${watch.stdout}${watch.stderr}`);
    assert.equal(watch.code, 1);
    assert.match(watch.stderr, sentence);
    assert.equal(watch.stdout, '');
  });
}

test('dev creates a missing notify secret as a Standard Webhooks secret, so the apply goes through', async () => {
  const { compile } = await import('../../../cli/compiler/compile.ts');
  const { devSecretValue, secretNames } = await import('../../../cli/commands/dev.ts');
  const { isNotifySecret } = await import('../../../core/notify.ts');
  const { factoryFiles } = await import('../../runtime/automations/helpers.ts');
  const files = factoryFiles({ review: { notify: { url: 'https://hooks.example.com/runs', secretName: 'review-notify' } } });
  const { snapshot, diagnostics } = compile(files);
  assert.ok(snapshot, JSON.stringify(diagnostics));
  assert.ok(secretNames(snapshot).includes('review-notify'));
  assert.equal(isNotifySecret(devSecretValue(snapshot, 'review-notify')), true);
});
