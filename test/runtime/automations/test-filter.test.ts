import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { explainFilter, formatPath } from '../../../core/filter.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';
import { FACTORY, GITHUB_UID, OTHER_UID, applyFactory, createSecret, deliverGithub, deliveryRuns, type AutomationSpec } from './helpers.ts';

/**
 * Test filter (docs/automations.md) against live matching: a set of deliveries replayed against
 * several automations; for every stored delivery and every automation, Test filter's
 * `would_trigger` is exactly whether that delivery started a run of that automation.
 */

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '../ingress/schemes/fixtures/github');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));

const FILTERS: Record<string, AutomationSpec> = {
  opened: { payload: { action: ['opened', 'reopened'] } },
  'not-draft': { payload: { pull_request: { draft: false } } },
  'bug-label': { payload: { issue: { labels: { name: 'bug' } } } },
  'no-action': { payload: { action: { exists: false } } },
  'not-bots': { payload: { sender: { type: { not_in: ['Bot'] } } } },
  'main-push': { payload: { ref: ['refs/heads/main', 'refs/heads/master'], deleted: false } },
  everything: {},
  'two-triggers': { uids: [GITHUB_UID, OTHER_UID], payload: { number: { in: [1, 2] } } },
};

const BODIES: Buffer[] = [
  fixture('pull_request.opened.json'),
  fixture('issues.opened.json'),
  fixture('push.json'),
  Buffer.from('{"action":"closed","pull_request":{"draft":true},"sender":{"type":"Bot"}}'),
  Buffer.from('{"ref":"refs/heads/main","deleted":false,"sender":{"type":"User"}}'),
  Buffer.from('{"issue":{"labels":[{"name":"enhancement"},{"name":"bug"}]},"number":"1"}'),
  Buffer.from('[{"action":"opened"}]'),
  Buffer.from('"just a string"'),
  Buffer.from('null'),
  Buffer.from('{"number":1.0,"action":"reopened"}'),
];

interface Stored {
  deliveryId: string;
  uid: string;
  body: Buffer;
}

const test = (rt: TestRuntime, automation: string, body: unknown) =>
  rt.fetch(`/api/v1/automations/${FACTORY}/${automation}/test`, { method: 'POST', json: body });

describe('Test filter', () => {
  let rt: TestRuntime;
  const stored: Stored[] = [];

  before(async () => {
    rt = await startTestRuntime({ flags: { limits: { deliveriesPerMinute: 10_000 } } });
    (rt.services.executor as { pause(): void } | undefined)?.pause();
    await createSecret(rt);
    await applyFactory(rt, FILTERS, { github: GITHUB_UID, other: OTHER_UID });
    for (const uid of [GITHUB_UID, OTHER_UID]) {
      for (const body of BODIES) {
        const { res, deliveryId } = await deliverGithub(rt, body, { uid });
        assert.equal(res.status, 202);
        stored.push({ deliveryId, uid, body });
      }
    }
  });
  after(() => rt.stop());

  it('gives the same answer as live matching for every stored delivery and every automation', async () => {
    let triggered = 0;
    for (const d of stored) {
      const live = new Set((await deliveryRuns(rt, d.deliveryId, d.uid)).map((r) => r.automation));
      for (const automation of Object.keys(FILTERS)) {
        const res = await test(rt, automation, { delivery_id: d.deliveryId });
        const answer = (await res.json()) as Record<string, any>;
        assert.equal(res.status, 200, JSON.stringify(answer));
        assert.equal(answer.would_trigger, live.has(automation), `${automation} on ${d.uid} ${d.body.toString().slice(0, 60)}`);
        assert.equal(answer.delivery.webhook_uid, d.uid);
        assert.equal(answer.would_trigger, answer.webhook_check.passed && answer.payload_check.passed);
        if (answer.would_trigger) triggered++;
      }
    }
    // The set is meant to exercise both answers.
    assert.ok(triggered > 10 && triggered < stored.length * Object.keys(FILTERS).length - 10, String(triggered));
  });

  it('a payload miss names the key path and the reason, as explainFilter does', async () => {
    const d = stored.find((s) => s.uid === GITHUB_UID && s.body.toString().includes('"draft":true'))!;
    const answer = (await (await test(rt, 'not-draft', { delivery_id: d.deliveryId })).json()) as Record<string, any>;
    const explained = explainFilter({ pull_request: { draft: false } }, JSON.parse(d.body.toString()));
    assert.equal(explained.matches, false);
    assert.deepEqual(answer, {
      automation: { factory: FACTORY, name: 'not-draft' },
      delivery: { delivery_id: d.deliveryId, webhook_uid: GITHUB_UID, webhook_name: 'github', outcome: 'accepted', received_at: answer.delivery.received_at },
      would_trigger: false,
      webhook_check: { passed: true, detail: `trigger 1 selects webhook github (${GITHUB_UID}), which received this delivery` },
      payload_check: {
        passed: false,
        trigger: 0,
        path: 'pull_request.draft',
        path_segments: ['pull_request', 'draft'],
        reason: explained.matches ? '' : explained.reason,
        detail: `${formatPath(['pull_request', 'draft'])}: ${explained.matches ? '' : explained.reason}`,
      },
      automation_enabled: true,
    });
  });

  it('a delivery of a webhook the automation does not select fails the webhook check', async () => {
    const d = stored.find((s) => s.uid === OTHER_UID)!;
    const answer = (await (await test(rt, 'opened', { delivery_id: d.deliveryId })).json()) as Record<string, any>;
    assert.equal(answer.would_trigger, false);
    assert.equal(answer.webhook_check.passed, false);
    assert.match(answer.webhook_check.detail, new RegExp(`no trigger selects webhook other \\(${OTHER_UID}\\)`));
    assert.equal(answer.payload_check.passed, false);
    assert.equal(answer.payload_check.path, undefined);
  });

  it('works for deliveries older than the automation', async () => {
    await applyFactory(rt, { ...FILTERS, newcomer: { payload: { action: 'opened' } } }, { github: GITHUB_UID, other: OTHER_UID });
    for (const d of stored.filter((s) => s.uid === GITHUB_UID)) {
      const res = await test(rt, 'newcomer', { delivery_id: d.deliveryId, webhook_uid: GITHUB_UID });
      const answer = (await res.json()) as Record<string, any>;
      assert.equal(res.status, 200);
      const body = JSON.parse(d.body.toString());
      assert.equal(answer.would_trigger, explainFilter({ action: 'opened' }, body).matches);
    }
  });

  it('says so when the automation is disabled (live, nothing would start)', async () => {
    await applyFactory(rt, { ...FILTERS, everything: { enabled: false } }, { github: GITHUB_UID, other: OTHER_UID });
    const d = stored[0];
    const answer = (await (await test(rt, 'everything', { delivery_id: d.deliveryId })).json()) as Record<string, any>;
    assert.equal(answer.would_trigger, true);
    assert.equal(answer.automation_enabled, false);
    assert.match(answer.note, /disabled/);
  });

  it('a delivery without a stored payload is a 409 that says why', async () => {
    // A request with a bad signature is logged Rejected (auth) and keeps no payload.
    const res = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, {
      method: 'POST',
      headers: { 'X-GitHub-Delivery': 'rejected-one', 'X-Hub-Signature-256': 'sha256=' + '0'.repeat(64) },
      body: '{"action":"opened"}',
    });
    assert.equal(res.status, 401);
    const answer = await test(rt, 'opened', { delivery_id: 'rejected-one' });
    assert.equal(answer.status, 409);
    const problem = (await answer.json()) as Record<string, any>;
    assert.equal(problem.code, 'conflict');
    assert.match(problem.detail, /Rejected \(auth\).*only Accepted deliveries keep their payload/);
  });

  it('unknown deliveries and automations are 404; bad bodies are 400', async () => {
    const cases: [string, unknown, number][] = [
      ['opened', { delivery_id: 'no-such-delivery' }, 404],
      ['no-such-automation', { delivery_id: stored[0].deliveryId }, 404],
      ['opened', { delivery_id: stored[0].deliveryId, webhook_uid: 'wh_unknownunknownunknownunkno' }, 404],
      ['opened', {}, 400],
      ['opened', { delivery_id: 7 }, 400],
      ['opened', { delivery_id: 'x', webhook_uid: 'github' }, 400],
      ['opened', { delivery_id: 'x', extra: true }, 400],
      ['opened', [], 400],
    ];
    for (const [automation, body, status] of cases) {
      const res = await test(rt, automation, body);
      const problem = (await res.json()) as Record<string, any>;
      assert.equal(res.status, status, `${automation} ${JSON.stringify(body)}: ${JSON.stringify(problem)}`);
      assert.equal(problem.code, status === 404 ? 'resource_not_found' : 'invalid_request');
    }
  });

  it('an id on several webhooks asks for webhook_uid', async () => {
    const body = Buffer.from('{"action":"opened"}');
    await deliverGithub(rt, body, { uid: GITHUB_UID, deliveryId: 'same-id' });
    await deliverGithub(rt, body, { uid: OTHER_UID, deliveryId: 'same-id' });
    // `opened` selects only github: that webhook is searched first, so the answer is unambiguous.
    assert.equal((await test(rt, 'opened', { delivery_id: 'same-id' })).status, 200);
    // `two-triggers` selects both.
    const res = await test(rt, 'two-triggers', { delivery_id: 'same-id' });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as Record<string, any>).detail, /give webhook_uid/);
    const answer = (await (await test(rt, 'two-triggers', { delivery_id: 'same-id', webhook_uid: OTHER_UID })).json()) as Record<string, any>;
    assert.equal(answer.delivery.webhook_uid, OTHER_UID);
    assert.equal(answer.webhook_check.detail, `trigger 2 selects webhook other (${OTHER_UID}), which received this delivery`);
  });
});
