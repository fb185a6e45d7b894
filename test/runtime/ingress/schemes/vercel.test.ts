import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { vercel } from '../../../../runtime/ingress/schemes/vercel.ts';
import { assertFails, assertOk, commonCases, verify } from './helpers.ts';

// Written from the reference table: hex HMAC-SHA1 of the body.
const signed = (body: Buffer, secret: string) => ({
  'x-vercel-signature': createHmac('sha1', secret).update(body).digest('hex'),
});
const BODY = Buffer.from(JSON.stringify({ id: 'evt_v1', type: 'deployment.succeeded', payload: { deployment: { id: 'dpl_1' } } }));

describe('vercel: x-vercel-signature <hex HMAC-SHA1> (secondary sources)', () => {
  commonCases({ scheme: vercel, secret: 'vercel-secret', body: BODY, sign: signed, signatureHeader: 'x-vercel-signature' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const hex = 'edc3b5f2be7ac62ced9ba13fbc9eaccdcdf805ac';
  test('the pinned vector passes', () => assertOk(verify(vercel, { 'x-vercel-signature': hex }, body, 'vercel-secret')));
  test('a SHA-256 length signature is malformed', () => {
    const sha256 = createHmac('sha256', 'vercel-secret').update(body).digest('hex');
    assertFails(verify(vercel, { 'x-vercel-signature': sha256 }, body, 'vercel-secret'), 'malformed_signature');
  });
});
