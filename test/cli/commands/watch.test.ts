import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '../../../cli/client.ts';
import { watchAndApply } from '../../../cli/commands/watch.ts';
import { diagnosticFormat } from '../../../cli/commands/validate.ts';
import { bufferIO } from '../helpers.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';
import { ROOT } from '../../helpers/cli.ts';

/**
 * `factory watch` (and `dev`, which runs the same loop) in this process against a real runtime,
 * on a copy of the example repo: what it holds back, and what it survives.
 */


test('watch holds back a webhook deletion, survives a link loop, ignores what the loader never reads, and shows file names safely', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'factory-watch-'));
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  const repo = join(tmp, 'repo');
  cpSync(join(ROOT, 'examples', 'factory'), repo, { recursive: true });
  // The automations live elsewhere in the repo, behind a link the compiler reads through.
  mkdirSync(join(repo, 'lib'));
  renameSync(join(repo, 'automations'), join(repo, 'lib', 'automations'));
  symlinkSync(join('lib', 'automations'), join(repo, 'automations'));
  // A big tree outside the repo, linked into it: never walked.
  const outside = join(tmp, 'outside');
  mkdirSync(join(outside, 'deep', 'er'), { recursive: true });
  writeFileSync(join(outside, 'deep', 'er', 'file.txt'), 'x');
  const rt = await startTestRuntime();
  for (const name of ['ci-webhook-token', 'alerts-url-token', 'github-webhook-secret']) {
    await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name, value: 'v'.repeat(40) } });
  }
  const io = bufferIO({}, { cwd: tmp });
  const outcomes: string[] = [];
  const controller = new AbortController();
  let watching: Promise<void> = Promise.resolve();
  // Whatever happens, the watch ends before the runtime does, so a failing test never hangs.
  t.after(async () => {
    controller.abort();
    await watching;
    await rt.stop();
  });
  watching = watchAndApply({
    dir: 'repo',
    client: createClient({ server: rt.url, apiKey: rt.adminKey }),
    io,
    format: diagnosticFormat(io, undefined),
    signal: controller.signal,
    onCycle: (o) => outcomes.push(o),
  });
  const cycles = async (n: number, what: string) => eventually(() => outcomes.length >= n, what);
  /** Waits for the next cycle that ends as `outcome` (an editor or the OS may add a quiet one first). */
  const next = async (outcome: string, what: string) => {
    const from = outcomes.length;
    await eventually(() => outcomes.slice(from).includes(outcome), `${what} (outcomes so far: ${outcomes.join(', ')}; ${io.err})`);
  };
  await cycles(1, 'the first apply');
  assert.equal(outcomes[0], 'applied', io.err);
  const webhooks = async () => ((await (await rt.fetch('/api/v1/webhooks')).json()) as { webhooks: { name: string }[] }).webhooks.map((w) => w.name);
  assert.deepEqual(await webhooks(), ['alerts', 'ci', 'github']);

  // A webhook file gone for a moment (a branch switch, a move): not applied, said why, nothing deleted.
  const ci = join(repo, 'webhooks', 'ci.yaml');
  renameSync(ci, join(tmp, 'ci.yaml'));
  // A cycle already reading the tree when the file went may fail on it first (the file it listed is
  // gone); the move's own cycle then says why nothing is applied.
  const held = /Not applied: this would delete webhook 'ci', and a deleted webhook's URL never works again; restore its file, or run `factory apply repo` to delete it; watching for changes\.\n/;
  await eventually(() => held.test(io.err) && outcomes.at(-1) === 'failed', 'the cycle after the move says why nothing is applied');
  assert.deepEqual(await webhooks(), ['alerts', 'ci', 'github']);
  renameSync(join(tmp, 'ci.yaml'), ci);
  await next('unchanged', 'the cycle after the file came back');

  // A link loop and links to a tree outside: a warning at most, and the watch goes on.
  const changes = () => (io.out.match(/^Change in /gm) ?? []).length;
  const before = changes();
  symlinkSync('..', join(repo, 'automations', 'up'));
  symlinkSync(outside, join(repo, 'share'));
  symlinkSync(outside, join(repo, 'webhooks', 'elsewhere'));
  writeFileSync(join(repo, 'README.md'), 'not a definition\n');
  // A name with a terminal escape: shown as \xNN, never sent to the terminal.
  writeFileSync(join(repo, 'automations', 'evil\x1b]0;PWNED\x07.txt'), 'x');
  await eventually(() => changes() > before, 'the cycle after the odd files');
  // The warning comes when that cycle has read the tree, after its "Change in" line.
  await eventually(() => /evil\\x1b\]0;PWNED\\x07\.txt/.test(io.err), 'the warning about the odd file names it escaped');
  assert.ok(!io.out.includes('\x1b') && !io.err.includes('\x1b'), 'no escape reaches the terminal');
  assert.doesNotMatch(io.out, /Change in (README|share|webhooks\/elsewhere\/)/, 'nothing outside the definitions, or behind a link that leads outside, is watched');
  writeFileSync(ci, readFileSync(ci, 'utf8').replace('Build results from the CI system', 'CI builds'));
  await next('applied', 'the apply after an edit');
  // An edit behind the in-repo link is seen; one in the tree outside is not.
  const alerts = join(repo, 'lib', 'automations', 'alerts.md');
  writeFileSync(alerts, readFileSync(alerts, 'utf8') + '\nAlso say which service fired.\n');
  await next('applied', 'the apply after an edit behind the link');
  assert.doesNotMatch(io.out, /Change in (README|share|webhooks\/elsewhere\/)/, 'nor later');
});
