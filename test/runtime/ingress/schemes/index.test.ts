import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { SIGNATURE_SCHEMES } from '../../../../core/snapshot.ts';
import { SCHEMES, SIGNATURE_TOLERANCE_SECONDS, headersFrom } from '../../../../runtime/ingress/schemes/index.ts';
import type { SchemeFailure } from '../../../../runtime/ingress/schemes/types.ts';
import { NOW } from './helpers.ts';

const FAILURES: readonly SchemeFailure[] = [
  'missing_signature', 'malformed_signature', 'signature_mismatch', 'missing_timestamp',
  'malformed_timestamp', 'timestamp_too_old', 'timestamp_in_future', 'invalid_secret',
];

describe('SCHEMES registry', () => {
  test('holds exactly the 15 scheme ids of docs/signatures.md, each under its own id', () => {
    assert.deepEqual(Object.keys(SCHEMES).sort(), [...SIGNATURE_SCHEMES].sort());
    for (const [id, scheme] of Object.entries(SCHEMES)) assert.equal(scheme.id, id);
  });

  test('delivery-id headers follow the reference table (docs/ingress.md#identity), lowercase', () => {
    const expected: Record<string, string[]> = {
      'standard-webhooks': ['webhook-id', 'svix-id'],
      github: ['x-github-delivery'],
      gitlab: ['idempotency-key', 'x-gitlab-event-uuid'],
      bitbucket: ['x-request-uuid'],
      stripe: [],
      shopify: ['x-shopify-event-id', 'x-shopify-webhook-id'],
      paddle: [],
      sentry: [],
      vercel: [],
      netlify: [],
      pagerduty: ['x-webhook-id'],
      rootly: [],
      linear: ['linear-delivery'],
      slack: [],
      jira: ['x-atlassian-webhook-identifier'],
    };
    for (const [id, scheme] of Object.entries(SCHEMES)) assert.deepEqual([...scheme.deliveryIdHeaders], expected[id], id);
  });

  test('exactly the schemes that sign a timestamp say so', () => {
    const timed = Object.values(SCHEMES).filter((scheme) => scheme.signsTimestamp).map((scheme) => scheme.id).sort();
    assert.deepEqual(timed, ['linear', 'paddle', 'rootly', 'slack', 'standard-webhooks', 'stripe']);
  });

  test('the tolerance is five minutes (docs/runtime.md#limits)', () => assert.equal(SIGNATURE_TOLERANCE_SECONDS, 300));
});

describe('headersFrom', () => {
  test('looks names up case-insensitively', () => {
    const headers = headersFrom({ 'x-hub-signature-256': 'sha256=ab', 'Stripe-Signature': 't=1' });
    assert.equal(headers.get('X-Hub-Signature-256'), 'sha256=ab');
    assert.equal(headers.get('stripe-signature'), 't=1');
    assert.equal(headers.get('x-missing'), undefined);
  });
  test('joins repeated values as Node does and skips undefined', () => {
    const headers = headersFrom({ 'x-a': ['1', '2'], 'x-b': undefined });
    assert.equal(headers.get('x-a'), '1, 2');
    assert.equal(headers.get('x-b'), undefined);
  });
});

// Every header any scheme reads, so random requests reach past the first guard clause.
const HEADER_NAMES = [
  'webhook-id', 'webhook-timestamp', 'webhook-signature', 'svix-id', 'svix-timestamp', 'svix-signature',
  'x-hub-signature-256', 'x-hub-signature', 'x-gitlab-token', 'stripe-signature', 'x-shopify-hmac-sha256',
  'paddle-signature', 'sentry-hook-signature', 'x-vercel-signature', 'x-webhook-signature',
  'x-pagerduty-signature', 'x-rootly-signature', 'linear-signature', 'linear-timestamp',
  'x-slack-signature', 'x-slack-request-timestamp',
];
const TOKENS = [
  't=', 'v1=', 'v0=', 'ts=', 'h1=', 'sha256=', 'v1,', 'v1a,', 'v0:', ',', ';', ' ', '=', '.', '-', '1748779200',
  '99999999999999999999', 'ff'.repeat(32), 'AA'.repeat(20), 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  'eyJhbGciOiJIUzI1NiJ9', 'eyJhbGciOiJub25lIn0', 'whsec_', '\u0000', '\u00ff', '💥',
];
const headerValue = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.array(fc.constantFrom(...TOKENS), { maxLength: 30 }).map((parts) => parts.join('')),
);
const request = fc.record({
  headers: fc.dictionary(fc.constantFrom(...HEADER_NAMES), headerValue),
  body: fc.oneof(fc.uint8Array({ maxLength: 512 }), fc.constant(new TextEncoder().encode('{"webhookTimestamp":1e400}'))),
  secret: fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('', 'whsec_', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')),
  nowMs: fc.oneof(fc.constant(NOW.getTime()), fc.constant(Number.NaN), fc.integer({ min: -8.64e15, max: 8.64e15 })),
});

describe('garbage never throws', () => {
  for (const scheme of Object.values(SCHEMES)) {
    test(`${scheme.id}: random headers, bodies, secrets and clocks give a result, never an exception`, () => {
      fc.assert(
        fc.property(request, ({ headers, body, secret, nowMs }) => {
          const result = scheme.verify(headersFrom(headers), Buffer.from(body), secret, new Date(nowMs));
          if (result.ok) return scheme.id === 'gitlab'; // only a token that equals the secret can pass
          return FAILURES.includes(result.reason);
        }),
        { numRuns: 300, seed: 20250601 },
      );
    });

    test(`${scheme.id}: huge and repeated header values are refused without throwing`, () => {
      const huge = 'v1='.padEnd(200_000, 'a,');
      const headers = Object.fromEntries(HEADER_NAMES.map((name) => [name, [huge, huge]]));
      const result = scheme.verify(headersFrom(headers), Buffer.alloc(0), 'secret', NOW);
      assert.equal(result.ok, false);
    });
  }
});
