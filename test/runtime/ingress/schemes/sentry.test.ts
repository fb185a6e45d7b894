import { createHmac } from 'node:crypto';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sentry } from '../../../../runtime/ingress/schemes/sentry.ts';
import { assertFails, assertOk, commonCases, githubPayload, verify } from './helpers.ts';

// Written from the reference table: hex HMAC-SHA256 of the body, no prefix.
const signed = (body: Buffer, secret: string) => ({
  'Sentry-Hook-Signature': createHmac('sha256', secret).update(body).digest('hex'),
});

describe('sentry: Sentry-Hook-Signature <hex>', () => {
  commonCases({ scheme: sentry, secret: 'sentry-secret', body: githubPayload('issues.opened'), sign: signed, signatureHeader: 'Sentry-Hook-Signature' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const hex = 'ac984909bd957fb72d735533374ae978e0bb04a625f1838efd1b98f059a72e29';
  test('the pinned vector passes', () => assertOk(verify(sentry, { 'sentry-hook-signature': hex }, body, 'sentry-secret')));
  test('a sha256= prefix is malformed', () => {
    assertFails(verify(sentry, { 'sentry-hook-signature': `sha256=${hex}` }, body, 'sentry-secret'), 'malformed_signature');
  });
  test('no delivery-id header: Request-ID changes per send', () => {
    assert.deepEqual(sentry.deliveryIdHeaders, []);
  });
});
