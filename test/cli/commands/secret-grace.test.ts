import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { sign } from '@octokit/webhooks-methods';
import { runCli } from '../../../cli/main.ts';
import { parseGrace } from '../../../cli/commands/secret.ts';
import { FakeClock } from '../../../runtime/clock.ts';
import { startTestRuntime, type TestRuntime } from '../../runtime/helpers.ts';
import { GITHUB_UID, PR_OPENED, SECRET_NAME, SECRET_VALUE, applyFactory, createSecret } from '../../runtime/automations/helpers.ts';
import { createHook } from '../../runtime/ingress/helpers.ts';
import { bufferIO, runBuffered } from '../helpers.ts';

/**
 * Graceful rotation (docs/runtime.md#graceful-rotation) through the real CLI and real HTTP, with
 * the runtime's clock in the test's hands: after `factory secret update NAME --grace 1h` the
 * previous value verifies until the hour is over and is refused after; the new one verifies
 * throughout; the delivery log says which version authenticated each delivery.
 */

const HOUR_MS = 3_600_000;
const NEW_GITHUB = 'the-new-github-signing-secret';
const NEW_TOKEN = 'the-new-token-value-for-the-tools-webhooks';
const SLACK_OLD = 'old-slack-signing-secret';
const SLACK_NEW = 'new-slack-signing-secret';

describe('secret update --grace', () => {
  const clock = new FakeClock(Date.now());
  let rt: TestRuntime;
  let oldToken: string;
  let ci: string;
  let hookUrl: string;
  let slackUrl: string;

  const cli = (args: string[], stdin?: string) =>
    runBuffered(args, { FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, stdin === undefined ? {} : { stdin: Readable.from([stdin]) });
  const github = async (secret: string, deliveryId: string) => {
    const body = PR_OPENED.toString('utf8');
    const res = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-GitHub-Event': 'pull_request', 'X-GitHub-Delivery': deliveryId, 'X-Hub-Signature-256': await sign(secret, body) },
      body,
    });
    return res.status;
  };
  const token = async (value: string, id: string) =>
    (await fetch(`${rt.url}/webhooks/w/${ci}`, { method: 'POST', headers: { Authorization: `Bearer ${value}`, 'X-Delivery': id }, body: `{"id":"${id}"}` })).status;
  const urlToken = async (value: string, id: string) =>
    (await fetch(hookUrl.replace('{token}', value), { method: 'POST', body: `{"id":"${id}"}` })).status;
  /** Signed as Slack documents it, at the runtime's (fake) time, so the five-minute window holds. */
  const slack = async (secret: string, id: string, ageSeconds = 0) => {
    const body = `{"type":"event_callback","event_id":"${id}"}`;
    const ts = Math.floor(clock.now().getTime() / 1000) - ageSeconds;
    const sig = `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;
    return (await fetch(slackUrl, { method: 'POST', headers: { 'X-Slack-Request-Timestamp': String(ts), 'X-Slack-Signature': sig }, body })).status;
  };
  const versionOf = async (uid: string, id: string) => {
    const res = await rt.fetch(`/api/v1/webhooks/${uid}/deliveries/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200, id);
    return ((await res.json()) as { secret_version: number | null }).secret_version;
  };

  before(async () => {
    rt = await startTestRuntime({ clock });
    await createSecret(rt);
    // An automation that matches nothing: the deliveries here need no runs.
    await applyFactory(rt, { review: { payload: { action: 'never' } } });
    const created = await createHook(rt, 'tools', { name: 'ci', auth_mode: 'token', secret_name: 'tools-token', delivery_id_header: 'X-Delivery' });
    ci = created.uid;
    oldToken = created.secret!;
    // The same team secret behind a url_token webhook: one update moves both.
    hookUrl = (await createHook(rt, 'tools', { name: 'hook', auth_mode: 'url_token', secret_name: 'tools-token' })).url;
    slackUrl = (await createHook(rt, 'tools', { name: 'chat', auth_mode: 'signature', signature_scheme: 'slack', secret: SLACK_OLD, secret_name: 'tools-slack' })).url;
  });
  after(() => rt.stop());

  it('moves every webhook of the secret to the new value and names them with the end of the grace', async () => {
    const until = new Date(clock.now().getTime() + HOUR_MS).toISOString();
    const t = await cli(['secret', 'update', 'tools-token', '--grace', '1h'], NEW_TOKEN);
    assert.equal(t.code, 0, t.err);
    assert.equal(t.out, `updated secret tools-token (version 2)\nmoved to version 2; the previous value also verifies until ${until}: tools/ci, tools/hook\n`);
    assert.equal(t.err, '');
    const g = await cli(['secret', 'update', SECRET_NAME, '--grace', '1h'], NEW_GITHUB);
    assert.equal(g.code, 0, g.err);
    assert.match(g.out, /the previous value also verifies until .*: shop\/github\n$/);
    assert.equal((await cli(['secret', 'update', 'tools-slack', '--grace', '60m'], SLACK_NEW)).code, 0);

    const shown = await cli(['webhook', 'show', 'ci', '--factory', 'tools']);
    assert.match(shown.out, /secret: +tools-token \(bound to version 2\)\n/);
    assert.match(shown.out, new RegExp(`previous secret: +version 1, accepted until ${until.replace(/[.]/g, '\\.')}\\n`));
  });

  it('inside the window both values verify, for token, url_token and signatures; the log says which did', async () => {
    clock.advance(HOUR_MS / 2);
    // An apply that keeps the bound version keeps the grace.
    await applyFactory(rt, { review: { payload: { action: 'never' } } });
    const hook = (await (await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}`)).json()) as Record<string, unknown>;
    assert.equal(hook.secret_version, 2);
    assert.equal(hook.previous_secret_version, 1);
    assert.equal(await token(oldToken, 'tok-old'), 202);
    assert.equal(await token(NEW_TOKEN, 'tok-new'), 202);
    assert.equal(await urlToken(oldToken, 'url-old'), 202);
    assert.equal(await urlToken(NEW_TOKEN, 'url-new'), 202);
    assert.equal(await github(SECRET_VALUE, 'gh-old'), 202);
    assert.equal(await github(NEW_GITHUB, 'gh-new'), 202);
    assert.equal(await slack(SLACK_OLD, 'sl-old'), 202);
    assert.equal(await slack(SLACK_NEW, 'sl-new'), 202);
    assert.equal(await token('neither-of-them', 'tok-bad'), 401);
    // Signed with the previous value but six minutes old: logged as too old, as without a rotation.
    assert.equal(await slack(SLACK_OLD, 'sl-stale', 360), 401);
    const slackUid = slackUrl.split('/').at(-1)!;
    const [stale] = ((await (await rt.fetch(`/api/v1/webhooks/${slackUid}/deliveries?limit=1`)).json()) as { deliveries: { reason: string }[] }).deliveries;
    assert.equal(stale.reason, 'timestamp_too_old');

    assert.equal(await versionOf(ci, 'tok-old'), 1);
    assert.equal(await versionOf(ci, 'tok-new'), 2);
    assert.equal(await versionOf(GITHUB_UID, 'gh-old'), 1);
    assert.equal(await versionOf(GITHUB_UID, 'gh-new'), 2);
    assert.equal(await versionOf(ci, 'tok-bad'), null);

    const old = await cli(['delivery', 'show', 'github', 'gh-old', '--factory', 'shop']);
    assert.equal(old.code, 0, old.err);
    assert.match(old.out, /^secret: +version 1$/m);
    assert.match((await cli(['delivery', 'show', 'github', 'gh-new', '--factory', 'shop'])).out, /^secret: +version 2$/m);
  });

  it('after the window the previous value is refused and the new one still verifies', async () => {
    clock.advance(HOUR_MS / 2 + 1);
    assert.equal(await token(oldToken, 'tok-late'), 401);
    assert.equal(await urlToken(oldToken, 'url-late'), 401);
    assert.equal(await github(SECRET_VALUE, 'gh-late'), 401);
    assert.equal(await slack(SLACK_OLD, 'sl-late'), 401);
    assert.equal(await token(NEW_TOKEN, 'tok-after'), 202);
    assert.equal(await urlToken(NEW_TOKEN, 'url-after'), 202);
    assert.equal(await github(NEW_GITHUB, 'gh-after'), 202);
    assert.equal(await slack(SLACK_NEW, 'sl-after'), 202);
    assert.equal(await versionOf(GITHUB_UID, 'gh-after'), 2);
  });

  it('without --grace, as before: webhooks keep the version they are bound to', async () => {
    const u = await cli(['secret', 'update', 'tools-token'], 'a-third-value-nobody-is-bound-to');
    assert.equal(u.code, 0, u.err);
    assert.match(u.err, /tools\/ci \(version 2\), tools\/hook \(version 2\)/);
    assert.equal(await token('a-third-value-nobody-is-bound-to', 'tok-third'), 401);
    assert.equal(await token(NEW_TOKEN, 'tok-still'), 202);
  });

  it('--grace 0 moves the webhooks at once, with no previous value', async () => {
    const u = await cli(['secret', 'update', 'tools-token', '--grace', '0'], 'the-fourth-value-of-the-tools-webhooks');
    assert.equal(u.code, 0, u.err);
    assert.match(u.out, /moved to version 4 at once, the previous value no longer verifies: tools\/ci, tools\/hook\n$/);
    assert.equal(await token(NEW_TOKEN, 'tok-gone'), 401);
    assert.equal(await token('the-fourth-value-of-the-tools-webhooks', 'tok-fourth'), 202);
    assert.equal(await versionOf(ci, 'tok-fourth'), 4);
  });

  it('a bad grace is refused in one sentence, by the CLI and by the API', async () => {
    for (const bad of ['tomorrow', '24', '-1h', '31d', '']) {
      const r = await cli(['secret', 'update', 'tools-token', '--grace', bad], 'unused');
      assert.equal(r.code, 2, bad); // a usage error
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
      assert.match(r.err, /--grace must be a duration such as 24h/);
    }
    for (const grace_seconds of [-1, 1.5, '24h', 30 * 86_400 + 1]) {
      const res = await rt.fetch('/api/v1/secrets/tools-token', { method: 'PUT', json: { value: 'unused', grace_seconds } });
      assert.equal(res.status, 400, String(grace_seconds));
      const problem = (await res.json()) as { code: string; errors: { pointer: string }[] };
      assert.equal(problem.code, 'invalid_request');
      assert.equal(problem.errors[0].pointer, '/grace_seconds');
    }
    // Nothing was written by the refused requests.
    assert.equal(((await (await rt.fetch('/api/v1/secrets/tools-token')).json()) as { current_version: number }).current_version, 4);
  });

  it('parses durations', () => {
    assert.equal(parseGrace('24h'), 86_400);
    assert.equal(parseGrace('1d12h'), 129_600);
    assert.equal(parseGrace('90m'), 5_400);
    assert.equal(parseGrace('45s'), 45);
    assert.equal(parseGrace('0'), 0);
    assert.equal(parseGrace('30d'), 30 * 86_400);
  });
});

describe('the grace ends with any other new binding', () => {
  it('a webhook rotate during the grace refuses the previous value at once', async (t) => {
    const rt = await startTestRuntime();
    t.after(() => rt.stop());
    const hook = await createHook(rt, 'tools', { name: 'ci', auth_mode: 'token', delivery_id_header: 'X-Delivery' });
    const send = async (value: string, id: string) =>
      (await fetch(`${rt.url}/webhooks/w/${hook.uid}`, { method: 'POST', headers: { Authorization: `Bearer ${value}`, 'X-Delivery': id }, body: '{}' })).status;
    const io = bufferIO({ FACTORY_SERVER: rt.url, FACTORY_API_KEY: rt.adminKey }, { stdin: Readable.from(['second-token-value']) });
    assert.equal(await runCli(['secret', 'update', 'tools-ci-secret', '--grace', '24h'], io), 0, io.err);
    assert.equal(await send(hook.secret!, 'first'), 202);
    assert.equal(await send('second-token-value', 'second'), 202);

    const rotated = (await (await rt.fetch(`/api/v1/webhooks/${hook.uid}/rotate`, { method: 'POST', json: {} })).json()) as Record<string, any>;
    assert.equal(rotated.webhook.previous_secret_version, null);
    assert.equal(rotated.webhook.previous_secret_until, null);
    assert.equal(await send('second-token-value', 'third'), 401);
    assert.equal(await send(hook.secret!, 'fourth'), 401);
    assert.equal(await send(rotated.secret, 'fifth'), 202);
  });
});
