import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { shopify } from '../../../../runtime/ingress/schemes/shopify.ts';
import { assertFails, assertOk, commonCases, verify } from './helpers.ts';

// Written from the reference table: base64 HMAC-SHA256 of the body.
const signed = (body: Buffer, secret: string) => ({
  'X-Shopify-Hmac-Sha256': createHmac('sha256', secret).update(body).digest('base64'),
});
const BODY = Buffer.from(JSON.stringify({ id: 820982911946154500, email: 'jon@example.com', total_price: '403.00' }));

describe('shopify: X-Shopify-Hmac-Sha256 <base64>', () => {
  commonCases({ scheme: shopify, secret: 'shopify-secret', body: BODY, sign: signed, signatureHeader: 'X-Shopify-Hmac-Sha256' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const b64 = 'y6F/Uqw2tLszI0IUYRy6WfE4WkZ916Ok8dLbnGoCyc8=';
  test('the pinned vector passes', () => assertOk(verify(shopify, { 'x-shopify-hmac-sha256': b64 }, body, 'shopify-secret')));
  test('the hex form is malformed', () => {
    const hex = Buffer.from(b64, 'base64').toString('hex');
    assertFails(verify(shopify, { 'x-shopify-hmac-sha256': hex }, body, 'shopify-secret'), 'malformed_signature');
  });
  test('non-base64 is malformed', () => {
    assertFails(verify(shopify, { 'x-shopify-hmac-sha256': 'y6F/Uqw2tLszI0IU*Ry6WfE4WkZ916Ok8dLbnGoCyc8=' }, body, 'shopify-secret'), 'malformed_signature');
  });
});
