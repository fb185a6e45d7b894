import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../../cli/main.ts';
import { bufferIO } from '../helpers.ts';
import { startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';
import { PR_OPENED, applyFactory, createSecret, deliverGithub, deliveryRuns } from '../../runtime/automations/helpers.ts';

/** `factory delivery list|show` in-process against a real runtime with real deliveries. */

let rt: TestRuntime;
let hook: { uid: string; url: string; secret: string };
before(async () => {
  rt = await startTestRuntime();
  const res = await rt.fetch('/api/v1/factories/shop/webhooks', { method: 'POST', json: { name: 'orders' } });
  const json = (await res.json()) as { webhook: { uid: string; url: string }; secret: string };
  hook = { uid: json.webhook.uid, url: json.webhook.url, secret: json.secret };
  const send = (body: string, secret = hook.secret, id?: string) =>
    fetch(hook.url, { method: 'POST', body, headers: { Authorization: `Bearer ${secret}`, ...(id ? { 'X-Service-Delivery-Id': id } : {}) } });
  await send('{"order":1}', hook.secret, 'order-1');
  await send('{"order":1}', hook.secret, 'order-1');
  await send('{"order":2}', 'wrong', 'order-2');
});
after(() => rt.stop());

async function cli(args: string[]) {
  const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, { cwd: rt.dataDir, stdinIsTTY: true });
  return { code: await runCli(args, io), out: io.out, err: io.err };
}

test('delivery list prints the log newest first, as a table or JSON', async () => {
  const res = await cli(['delivery', 'list', 'orders']);
  assert.equal(res.code, 0, res.err);
  const lines = res.out.trim().split('\n');
  assert.match(lines[0], /^RECEIVED\s+OUTCOME\s+SIZE\s+DELIVERY ID\s+RUNS$/);
  assert.match(lines[1], /Rejected \(auth\)\s+11\s+order-2\s+-$/);
  assert.match(lines[2], /Duplicate\s+11\s+order-1\s+-$/);
  assert.match(lines[3], /Accepted\s+11\s+order-1\s+-$/);
  const json = await cli(['delivery', 'list', hook.uid, '--limit', '2', '--json']);
  assert.deepEqual((JSON.parse(json.out) as { outcome: string }[]).map((d) => d.outcome), ['rejected_auth', 'duplicate']);
  assert.equal((await cli(['delivery', 'list', 'orders', '--limit', '0'])).code, 2);
  assert.ok(!res.out.includes(hook.secret));
});

test('delivery show prints the Accepted entry with its payload', async () => {
  const res = await cli(['delivery', 'show', 'orders', 'order-1']);
  assert.equal(res.code, 0, res.err);
  assert.match(res.out, /outcome:\s+Accepted/);
  assert.match(res.out, /payload:\n\{\n  "order": 1\n\}/);
  const json = JSON.parse((await cli(['delivery', 'show', 'orders', 'order-1', '--json'])).out) as { payload: unknown };
  assert.deepEqual(json.payload, { order: 1 });
  const missing = await cli(['delivery', 'show', 'orders', 'nope']);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /no delivery nope/);
});

test('delivery show lists the runs a delivery started; delivery list names them', async (t) => {
  const other = await startTestRuntime();
  t.after(() => other.stop());
  // Paused, so the runs stay QUEUED and the states printed are known.
  (other.services.executor as { pause(): void } | undefined)?.pause();
  await createSecret(other);
  await applyFactory(other, { review: {}, triage: {}, drafts: { payload: { pull_request: { draft: true } } } });
  const { deliveryId, res } = await deliverGithub(other, PR_OPENED);
  assert.equal(res.status, 202);
  const started = await deliveryRuns(other, deliveryId);
  assert.equal(started.length, 2);
  const cliOther = async (args: string[]) => {
    const io = bufferIO({ FACTORY_SERVER: other.url, FACTORY_API_KEY: other.adminKey }, { cwd: other.dataDir, stdinIsTTY: true });
    return { code: await runCli(args, io), out: io.out, err: io.err };
  };

  const show = await cliOther(['delivery', 'show', 'github', deliveryId]);
  assert.equal(show.code, 0, show.err);
  const runLines = show.out.slice(show.out.indexOf('runs:\n')).split('\n').slice(1, 4);
  assert.match(runLines[0], /^ {2}RUN\s+AUTOMATION\s+STATE$/);
  const shown = runLines.slice(1).map((l) => l.trim().split(/\s+/));
  assert.deepEqual(shown, started.map((r) => [r.run_id, r.automation, 'QUEUED']));
  assert.deepEqual(shown.map((r) => r[1]).sort(), ['review', 'triage']);
  const json = JSON.parse((await cliOther(['delivery', 'show', 'github', deliveryId, '--json'])).out) as { runs: unknown };
  assert.deepEqual(json.runs, started);

  const list = await cliOther(['delivery', 'list', 'github']);
  assert.equal(list.code, 0, list.err);
  assert.match(list.out.split('\n')[0], /^RECEIVED\s+OUTCOME\s+SIZE\s+DELIVERY ID\s+RUNS$/);
  assert.match(list.out.split('\n')[1], new RegExp(`Accepted\\s+\\d+\\s+${deliveryId}\\s+${started.map((r) => r.run_id).join(', ')}$`));
});

test('delivery show says when an Accepted delivery started no run', async () => {
  const res = await cli(['delivery', 'show', 'orders', 'order-1']);
  assert.match(res.out, /runs:\s+none/);
  const rejected = await cli(['delivery', 'show', 'orders', 'order-2']);
  assert.doesNotMatch(rejected.out, /runs:/);
});

test('delivery show prints a payload nested 20,000 levels deep without overflowing: a note in text, the stored bytes with --json', async () => {
  const body = '['.repeat(20_000) + ']'.repeat(20_000);
  const res = await fetch(hook.url, { method: 'POST', body, headers: { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': 'deep-1' } });
  assert.equal(res.status, 202);
  const text = await cli(['delivery', 'show', 'orders', 'deep-1']);
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /outcome:\s+Accepted/);
  assert.match(text.out, /payload:\s+nested more than 1000 levels deep, too deep to indent; `--json` prints it as stored\n$/);
  const json = await cli(['delivery', 'show', 'orders', 'deep-1', '--json']);
  assert.equal(json.code, 0, json.err);
  assert.ok(json.out.includes(`"payload":${body}`), 'the stored bytes, spliced as the runtime sent them');
  // A payload of ordinary depth is still indented.
  const shallow = await cli(['delivery', 'show', 'orders', 'order-1']);
  assert.match(shallow.out, /payload:\n\{\n  "order": 1\n\}/);
});

test('delivery show escapes the control characters a sender put in the delivery id, the user agent and the payload (C1 included); --json stays exact', async () => {
  const payload = { note: '\u009d0;PWNED\u009c\u009b2J\u007f', tab: 'a\tb' };
  const res = await fetch(hook.url, {
    method: 'POST',
    body: JSON.stringify(payload),
    // The id as UTF-8 bytes (a header string holds one character per byte): read back as U+009B.
    headers: { Authorization: `Bearer ${hook.secret}`, 'X-Service-Delivery-Id': Buffer.from('c1-\u009b2J', 'utf8').toString('latin1'), 'User-Agent': 'ua\u009b2Jx\u009d0;T' },
  });
  assert.equal(res.status, 202, await res.text());
  const show = await cli(['delivery', 'show', 'orders', 'c1-\u009b2J']);
  assert.equal(show.code, 0, show.err);
  assert.doesNotMatch(show.out, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'no raw control character reaches the terminal');
  assert.match(show.out, /^delivery id:  c1-\\x9b2J$/m);
  assert.match(show.out, /^user agent:   ua\\x9b2Jx\\x9d0;T$/m);
  assert.match(show.out, /"note": "\\x9d0;PWNED\\x9c\\x9b2J\\x7f"/);
  const json = JSON.parse((await cli(['delivery', 'show', 'orders', 'c1-\u009b2J', '--json'])).out) as { payload: unknown; user_agent: string };
  assert.deepEqual(json.payload, payload);
  assert.equal(json.user_agent, 'ua\u009b2Jx\u009d0;T');
});
