import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import path from 'node:path';
import { compile } from '../../../cli/compiler/compile.ts';
import { SCHEMES } from '../../../runtime/ingress/schemes/index.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { AGENTS, envYaml, waitForRun } from '../routes/runs-helpers.ts';
import { logOf } from './helpers.ts';

/**
 * Provider handshakes (docs/signatures.md#handshakes): Slack's Events API url_verification is
 * answered with its challenge after the signature is verified, logged, and starts no run, while
 * an ordinary event to the same webhook starts the automation that matches everything.
 */

const FACTORY = 'chat';
const UID = 'wh_slackslackslackslackslacks';
const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';

/** Signed the way Slack documents it: `v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing secret. */
function slackHeaders(body: string, secret = SECRET, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    'X-Slack-Request-Timestamp': String(ts),
    'X-Slack-Signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
  };
}

/** Slack's url_verification payload, as its Events API sends it when a Request URL is saved. */
const VERIFICATION = JSON.stringify({
  token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
  challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
  type: 'url_verification',
});

const EVENT = JSON.stringify({
  token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
  team_id: 'T061EG9R6',
  api_app_id: 'A0PNCHHK2',
  event: { type: 'app_mention', user: 'U061F7AUR', text: '<@U0LAN0Z89> is it everything a river should be?', ts: '1515449522.000016', channel: 'C0LAN2Q65' },
  type: 'event_callback',
  event_id: 'Ev0LAN670R',
  event_time: 1515449522,
});

describe('Slack url_verification', () => {
  let rt: TestRuntime;
  const post = (body: string, headers: Record<string, string>) => fetch(`${rt.url}/webhooks/w/${UID}`, { method: 'POST', headers, body });

  before(async () => {
    rt = await startTestRuntime({ flags: { metricsPort: 0 } });
    assert.equal((await rt.fetch('/api/v1/secrets', { method: 'POST', json: { name: 'slack-signing', value: SECRET } })).status, 201);
    const files = [
      { path: 'factory.yaml', text: `name: ${FACTORY}\n` },
      { path: 'environments/agent.yaml', text: envYaml({ command: [process.execPath, path.join(AGENTS, 'scripted-agent.mjs')] }) },
      { path: 'webhooks/slack.yaml', text: `authMode: signature\nsignatureScheme: slack\nsecretName: slack-signing\nuid: ${UID}\n` },
      // No payload filter: every delivery of the webhook would start a run.
      {
        path: 'automations/everything.md',
        text: `---\n${JSON.stringify({ triggers: [{ provider: 'webhook', event: 'received', filter: { webhook_ids: [UID] } }], environment: 'agent' })}\n---\nAnswer the mention.\n`,
      },
    ];
    const { snapshot, diagnostics } = compile(files);
    assert.ok(snapshot, JSON.stringify(diagnostics));
    const applied = await rt.fetch(`/api/v1/factories/${FACTORY}/apply`, { method: 'POST', json: { snapshot } });
    assert.equal(applied.status, 200, await applied.clone().text());
  });
  after(() => rt.stop());

  const runs = async () => ((await (await rt.fetch(`/api/v1/agent/runs?factory=${FACTORY}&limit=100`)).json()) as { runs: { run_id: string }[] }).runs;

  it('answers 200 with the challenge, logs Accepted with a note, and starts no run', async () => {
    const res = await post(VERIFICATION, slackHeaders(VERIFICATION));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });

    const [entry] = await logOf(rt, UID, 1);
    assert.equal(entry.outcome, 'accepted');
    assert.equal(entry.reason, 'handshake: url_verification');
    const detail = (await (await rt.fetch(`/api/v1/webhooks/${UID}/deliveries/${encodeURIComponent(entry.delivery_id)}`)).json()) as Record<string, any>;
    assert.deepEqual(detail.runs, []);
    assert.deepEqual(await runs(), []);

    // Slack retries a verification it did not see answered: the same body is answered again.
    const again = await post(VERIFICATION, slackHeaders(VERIFICATION));
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    assert.equal((await logOf(rt, UID, 1))[0].outcome, 'duplicate');
    assert.deepEqual(await runs(), []);

    // Counted as handshakes, not as deliveries (docs/runtime.md#metrics).
    const metrics = await (await fetch(`http://127.0.0.1:${rt.services.metrics!.port}/metrics`)).text();
    assert.match(metrics, /^factory_deliveries_total\{factory="chat",webhook="slack",outcome="handshake"\} 2$/m);
    assert.match(metrics, /^factory_deliveries_total\{factory="chat",webhook="slack",outcome="accepted"\} 0$/m);

    // Neither a replay nor Test filter makes it a run: a 409 saying why, and a note that live nothing starts.
    const replay = await rt.fetch(`/api/v1/webhooks/${UID}/deliveries/${encodeURIComponent(entry.delivery_id)}/replay`, { method: 'POST' });
    assert.equal(replay.status, 409);
    const problem = (await replay.json()) as { code: string; detail: string };
    assert.equal(problem.code, 'conflict');
    assert.match(problem.detail, /is a provider handshake \(url_verification\), which starts no run, so it cannot be replayed\.$/);
    assert.deepEqual(await runs(), []);
    const tested = await rt.fetch(`/api/v1/automations/${FACTORY}/everything/test`, { method: 'POST', json: { delivery_id: entry.delivery_id } });
    assert.equal(tested.status, 200);
    const result = (await tested.json()) as { would_trigger: boolean; note?: string };
    assert.equal(result.note, 'Live, nothing would start: the delivery is a provider handshake (url_verification), which starts no run whatever the filters say.');
  });

  it('refuses a verification signed with another secret, without the challenge', async () => {
    const res = await post(VERIFICATION, slackHeaders(VERIFICATION, 'not-the-signing-secret'));
    assert.equal(res.status, 401);
    assert.ok(!(await res.text()).includes('3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P'));
    const [entry] = await logOf(rt, UID, 1);
    assert.equal(entry.outcome, 'rejected_auth');
    assert.equal(entry.reason, 'signature_mismatch');
  });

  it('an ordinary event to the same webhook is a 202 that starts the run', async () => {
    const res = await post(EVENT, slackHeaders(EVENT));
    assert.equal(res.status, 202);
    const { delivery_id } = (await res.json()) as { delivery_id: string };
    const detail = (await (await rt.fetch(`/api/v1/webhooks/${UID}/deliveries/${encodeURIComponent(delivery_id)}`)).json()) as Record<string, any>;
    assert.equal(detail.reason, null);
    assert.equal(detail.runs.length, 1);
    assert.equal((await waitForRun(rt, detail.runs[0].run_id)).state, 'SUCCEEDED');
  });

  it('a body that only looks like one is an ordinary delivery', () => {
    const handshake = SCHEMES.slack.handshake!;
    assert.equal(handshake({ type: 'url_verification' }), undefined);
    assert.equal(handshake({ type: 'url_verification', challenge: 42 }), undefined);
    assert.equal(handshake({ type: 'event_callback', challenge: 'x' }), undefined);
    assert.equal(handshake([{ type: 'url_verification', challenge: 'x' }]), undefined);
    assert.equal(handshake(null), undefined);
  });
});

describe('handshakes of the other schemes', () => {
  it('only Slack has one: the rest are ordinary deliveries (docs/signatures.md#handshakes)', () => {
    const withHandshake = Object.values(SCHEMES)
      .filter((s) => s.handshake)
      .map((s) => s.id);
    assert.deepEqual(withHandshake, ['slack']);
  });
});
