import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import Stripe from 'stripe';
import { stripe } from '../../../../runtime/ingress/schemes/stripe.ts';
import { NOW_SECONDS, assertFails, assertOk, commonCases, verify, windowCases } from './helpers.ts';

const SECRET = 'whsec_test_5Tq9mV2xZ7bR4nK8pL1cH6dW';
const BODY = Buffer.from(JSON.stringify({ id: 'evt_1QxYz', object: 'event', type: 'invoice.paid', data: { object: { id: 'in_1' } } }));

const signAt = (timestamp: number, body: Buffer, secret: string) => ({
  'Stripe-Signature': Stripe.webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret, timestamp }),
});

describe('stripe: interop with stripe.webhooks.generateTestHeaderString', () => {
  commonCases({ scheme: stripe, secret: SECRET, body: BODY, sign: (body, secret) => signAt(NOW_SECONDS, body, secret), signatureHeader: 'Stripe-Signature' });
  windowCases({ scheme: stripe, secret: SECRET, body: BODY, signAt });
});

describe('stripe: secret handling and header format', () => {
  const body = Buffer.from('{"id":"evt_1","object":"event"}');
  const t = 1748779200;
  const now = new Date(t * 1000);
  // Computed once with node:crypto: HMAC-SHA256 keyed with the whole secret (prefix included)
  // as UTF-8 over `{t}.{body}`; pinned so a change on either side shows.
  const pinned = 'aca615a2f21ef011d11540331397a33bfb9df7c44929a1a877222a009e457d71';
  const computed = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
  const run = (header: string, secret = SECRET) => verify(stripe, { 'stripe-signature': header }, body, secret, now);

  test('the pinned vector matches node:crypto and passes', () => {
    assertOk(run(`t=${t},v1=${computed}`));
    assertOk(run(`t=${t},v1=${pinned}`));
  });
  test('the whole whsec_ string is the key: a base64-decoded key does not pass', () => {
    const decodedKey = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    const wrong = createHmac('sha256', decodedKey).update(`${t}.`).update(body).digest('hex');
    assertFails(run(`t=${t},v1=${wrong}`), 'signature_mismatch');
  });
  test('any v1 passes; v0 is ignored', () => {
    const other = 'ab'.repeat(32);
    assertOk(run(`t=${t},v1=${other},v1=${computed}`));
    assertOk(run(`t=${t},v0=${other},v1=${computed}`));
    assertFails(run(`t=${t},v0=${computed}`), 'malformed_signature');
  });
  test('whitespace after commas is tolerated', () => assertOk(run(`t=${t}, v1=${computed}`)));
  test('a missing t is missing_timestamp', () => assertFails(run(`v1=${computed}`), 'missing_timestamp'));
  test('a non-numeric t is malformed_timestamp', () => assertFails(run(`t=abc,v1=${computed}`), 'malformed_timestamp'));
  test('two t items are malformed_timestamp', () => assertFails(run(`t=${t},t=${t + 1},v1=${computed}`), 'malformed_timestamp'));
  test('a changed t is a mismatch', () => assertFails(run(`t=${t + 1},v1=${computed}`), 'signature_mismatch'));
});
