import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CREDENTIAL_HEADERS, isCredentialHeader } from '../../core/credential-headers.ts';
import { SCHEMES } from '../../runtime/ingress/schemes/index.ts';

test('credentials, signatures, tokens and signed timestamps are refused, in any letter case', () => {
  for (const name of [
    'Authorization',
    'AUTHORIZATION',
    'Proxy-Authorization',
    'Cookie',
    'Set-Cookie',
    'X-Hub-Signature-256',
    'X-Hub-Signature',
    'X-Gitlab-Token',
    'Stripe-Signature',
    'X-Shopify-Hmac-Sha256',
    'Paddle-Signature',
    'Sentry-Hook-Signature',
    'X-Vercel-Signature',
    'X-Webhook-Signature',
    'X-PagerDuty-Signature',
    'X-Rootly-Signature',
    'Linear-Signature',
    'Linear-Timestamp',
    'X-Slack-Signature',
    'X-Slack-Request-Timestamp',
    'webhook-signature',
    'Webhook-Timestamp',
    'svix-signature',
    'svix-timestamp',
    // Headers of providers the runtime has no scheme for, known by their words.
    'X-Auth-Token',
    'X-Hook-Secret',
    'X-Api-Key',
    'api_key',
    'X-ApiKey',
    'X-Signature',
    'X-Hub-Sig',
    'X-Access-Token',
    'X-Session-Id',
    'X-Amz-Security-Token',
    'X-Client-Credentials',
    'X-Webhook-Password',
    'X-JWT-Assertion',
    'x_auth',
  ]) {
    assert.ok(isCredentialHeader(name), name);
  }
});

test('event id headers stay allowed, the schemes\' own delivery-id headers included', () => {
  const ids = ['X-CI-Build-Id', 'X-Request-Id', 'Idempotency-Key', 'X-Webhook-Id', 'X-Event-Id', 'X-Delivery', 'X-Author-Id', 'X-Keyring-Id'];
  for (const scheme of Object.values(SCHEMES)) ids.push(...scheme.deliveryIdHeaders);
  for (const name of ids) assert.ok(!isCredentialHeader(name), name);
});

test('every header a signature scheme reads, other than its delivery-id headers, is refused', () => {
  const stamp = String(Math.floor(Date.parse('2026-11-23T10:00:00Z') / 1000));
  const checked = new Set<string>();
  // Each scheme reads headers through this view; a few kinds of value take it past its first checks.
  for (const value of [undefined, 'x', stamp, `t=${stamp},v1=00`, 'sha256=00', 'v1,AAAA', `ts=${stamp};h1=00`, 'a.b.c']) {
    for (const scheme of Object.values(SCHEMES)) {
      const read = new Set<string>();
      const headers = { get: (name: string) => (read.add(name.toLowerCase()), value) };
      try {
        scheme.verify(headers, Buffer.from('{"webhookTimestamp":1}'), 'secret', new Date('2026-11-23T10:00:00Z'));
      } catch {
        // Only the names read matter here.
      }
      for (const name of read) {
        if (scheme.deliveryIdHeaders.includes(name)) continue;
        checked.add(scheme.id);
        assert.ok(isCredentialHeader(name), `${scheme.id} reads ${name}, which is not refused as a delivery id header`);
      }
    }
  }
  // Else the loop above checked nothing: every scheme reads at least one credential header through the view.
  assert.deepEqual([...checked].sort(), Object.values(SCHEMES).map((s) => s.id).sort());
});

test('the listed headers are lowercase and unique', () => {
  assert.deepEqual(CREDENTIAL_HEADERS.map((h) => h.toLowerCase()), [...CREDENTIAL_HEADERS]);
  assert.equal(new Set(CREDENTIAL_HEADERS).size, CREDENTIAL_HEADERS.length);
});
