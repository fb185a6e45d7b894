import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { applyFactory, createSecret, deliverGithub, FACTORY, GITHUB_UID } from '../automations/helpers.ts';
import { startTestRuntime, type TestRuntime } from '../helpers.ts';

/**
 * The ingress accepts any JSON value, however deep (pipeline step 7, docs/ingress.md). Everything
 * after it must cope: matching follows the filter's structure, not the payload's, and the delivery
 * log shows the stored bytes as they are (docs/ingress.md#delivery-log) instead of re-serialising a
 * parsed value, which overflowed the stack and answered a bare 500.
 */

let rt: TestRuntime;

before(async () => {
  rt = await startTestRuntime();
  await createSecret(rt);
  await applyFactory(rt, {
    // Matches: a.a is present.
    deep: { payload: { a: { a: { exists: true } } } },
    // Does not match: a.a holds arrays, not objects, so a nested filter finds no b there.
    never: { payload: { a: { a: { b: { exists: true } } } } },
  });
});
after(() => rt.stop());

/** 100,000 levels of arrays under two objects (~200 KB, under the 262,144-byte cap). */
const DEEP_ARRAYS = '{"a":{"a":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}}';
/** 40,000 levels of objects (~240 KB). */
const DEEP_OBJECTS = '{"a":'.repeat(40_000) + '{"b": "x y"}' + '}'.repeat(40_000);

for (const [name, body, matches] of [['arrays', DEEP_ARRAYS, ['deep']], ['objects', DEEP_OBJECTS, ['deep']]] as const) {
  test(`a payload nested ${name} tens of thousands of levels deep: accepted, matched, and shown by the delivery log`, async () => {
    const sent = await deliverGithub(rt, Buffer.from(body));
    assert.equal(sent.res.status, 202, JSON.stringify(sent.json));

    const res = await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries/${sent.deliveryId}`);
    const text = await res.text();
    assert.equal(res.status, 200, text.slice(0, 300));
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(text.includes(`"payload":${body}`), 'the payload is the bytes received, spliced in as they are');
    const detail = JSON.parse(text) as Record<string, any>;
    assert.equal(detail.delivery_id, sent.deliveryId);
    assert.equal(detail.outcome, 'accepted');
    assert.equal(detail.has_payload, true);
    assert.equal(detail.size, Buffer.byteLength(body));
    assert.deepEqual(detail.runs.map((r: { automation: string }) => r.automation), matches);
    assert.equal(typeof detail.payload, 'object');

    const list = await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries`);
    assert.equal(list.status, 200);

    // Test filter against the stored delivery explains along the filter, not the payload.
    const tested = await rt.fetch(`/api/v1/automations/${FACTORY}/never/test`, { method: 'POST', json: { delivery_id: sent.deliveryId } });
    assert.equal(tested.status, 200, (await tested.clone().text()).slice(0, 300));
  });
}

test('the detail of an entry without a payload is plain JSON too', async () => {
  const sent = await fetch(`${rt.url}/webhooks/w/${GITHUB_UID}`, { method: 'POST', headers: { 'X-GitHub-Delivery': 'unsigned-1' }, body: '{}' });
  assert.equal(sent.status, 401);
  const res = await rt.fetch(`/api/v1/webhooks/${GITHUB_UID}/deliveries/unsigned-1`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const detail = (await res.json()) as Record<string, unknown>;
  assert.equal(detail.outcome, 'rejected_auth');
  assert.equal(detail.has_payload, false);
  assert.equal('payload' in detail, false);
  assert.deepEqual(detail.runs, []);
});
