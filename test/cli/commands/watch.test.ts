import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '../../../cli/client.ts';
import { watchAndApply } from '../../../cli/commands/watch.ts';
import { diagnosticFormat } from '../../../cli/commands/validate.ts';
import { bufferIO } from '../helpers.ts';
import { startTestRuntime } from '../../runtime/helpers.ts';
import { eventually } from '../../helpers/eventually.ts';

/**
 * `factory watch` (and `dev`, which runs the same loop) in this process against a real runtime,
 * on a copy of the example repo: what it holds back, and what it survives.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('watch holds back a webhook deletion, survives a link loop, ignores what the loader never reads, and shows file names safely', async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), 'factory-watch-'));
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  const repo = join(tmp, 'repo');
  cpSync(join(ROOT, 'examples', 'factory'), repo, { recursive: true });
  const rt = await startTestRuntime();
  t.after(() => rt.stop());
  for (const name of ['ci-webhook-token', 'alerts-url-token', 'github-webhook-secret']) {
    await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name, value: 'v'.repeat(40) } });
  }
  const io = bufferIO({}, { cwd: tmp });
  const outcomes: string[] = [];
  const controller = new AbortController();
  const watching = watchAndApply({
    dir: 'repo',
    client: createClient({ server: rt.url, apiKey: rt.adminKey }),
    io,
    format: diagnosticFormat(io, undefined),
    signal: controller.signal,
    onCycle: (o) => outcomes.push(o),
  });
  t.after(() => controller.abort());
  const cycles = async (n: number, what: string) => eventually(() => outcomes.length >= n, what);
  await cycles(1, 'the first apply');
  assert.equal(outcomes[0], 'applied', io.err);
  const webhooks = async () => ((await (await rt.fetch('/api/v1/webhooks')).json()) as { webhooks: { name: string }[] }).webhooks.map((w) => w.name);
  assert.deepEqual(await webhooks(), ['alerts', 'ci', 'github']);

  // A webhook file gone for a moment (a branch switch, a move): not applied, said why, nothing deleted.
  const ci = join(repo, 'webhooks', 'ci.yaml');
  renameSync(ci, join(tmp, 'ci.yaml'));
  await cycles(2, 'the cycle after the move');
  assert.equal(outcomes[1], 'failed');
  assert.match(io.err, /Not applied: this would delete webhook 'ci', and a deleted webhook's URL never works again; restore its file, or run `factory apply repo` to delete it; watching for changes\.\n/);
  assert.deepEqual(await webhooks(), ['alerts', 'ci', 'github']);
  renameSync(join(tmp, 'ci.yaml'), ci);
  await cycles(3, 'the cycle after the file came back');
  assert.equal(outcomes[2], 'unchanged', io.err);

  // A link loop and a link to a big tree outside: a warning at most, and the watch goes on.
  symlinkSync('..', join(repo, 'automations', 'up'));
  symlinkSync('/usr/share', join(repo, 'share'));
  writeFileSync(join(repo, 'README.md'), 'not a definition\n');
  // A name with a terminal escape: shown as \xNN, never sent to the terminal.
  writeFileSync(join(repo, 'automations', 'evil\x1b]0;PWNED\x07.txt'), 'x');
  await cycles(4, 'the cycle after the odd files');
  assert.ok(!io.out.includes('\x1b') && !io.err.includes('\x1b'), JSON.stringify((io.out + io.err).split('\n').filter((l) => l.includes('\x1b'))));
  assert.match(io.out, /Change in automations\/(up|evil\\x1b\]0;PWNED\\x07\.txt); applying repo\.\.\./);
  assert.doesNotMatch(io.out, /Change in (share|README)/);
  const before = outcomes.length;
  writeFileSync(ci, readFileSync(ci, 'utf8').replace('Build results from the CI system', 'CI builds'));
  await cycles(before + 1, 'the apply after an edit');
  assert.equal(outcomes.at(-1), 'applied', io.err);

  controller.abort();
  await watching;
});
