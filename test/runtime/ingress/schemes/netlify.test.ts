import { createHash, createHmac } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { describe, test } from 'node:test';
import { netlify } from '../../../../runtime/ingress/schemes/netlify.ts';
import { assertFails, assertOk, commonCases, githubPayload, verify } from './helpers.ts';

const SECRET = 'netlify-jws-secret';
const bodyHash = (body: Buffer) => createHash('sha256').update(body).digest('hex');
const jws = (claims: Record<string, unknown>, secret: string, alg = 'HS256') =>
  new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
const signed = async (body: Buffer, secret: string) => ({
  'X-Webhook-Signature': await jws({ iss: 'netlify', sha256: bodyHash(body) }, secret),
});

describe('netlify: X-Webhook-Signature JWS HS256 (secondary sources), interop with jose', () => {
  const body = githubPayload('push');
  commonCases({ scheme: netlify, secret: SECRET, body, sign: signed, signatureHeader: 'X-Webhook-Signature' });

  const run = (token: string, b = body) => verify(netlify, { 'x-webhook-signature': token }, b, SECRET);
  test('a wrong issuer is refused', async () => {
    assertFails(run(await jws({ iss: 'evil', sha256: bodyHash(body) }, SECRET)), 'malformed_signature');
  });
  test('a missing sha256 claim is refused', async () => {
    assertFails(run(await jws({ iss: 'netlify' }, SECRET)), 'malformed_signature');
  });
  test('alg none is refused', () => {
    const unsecured = new UnsecuredJWT({ iss: 'netlify', sha256: bodyHash(body) }).encode();
    assertFails(run(unsecured), 'malformed_signature');
  });
  test('HS512 is refused even with the right secret', async () => {
    assertFails(run(await jws({ iss: 'netlify', sha256: bodyHash(body) }, SECRET, 'HS512')), 'malformed_signature');
  });
  test('a JWS with a crit header is refused', () => {
    // Built by hand: a correctly keyed HS256 token carrying an extension we do not understand.
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', crit: ['x'], x: 1 })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ iss: 'netlify', sha256: bodyHash(body) })).toString('base64url');
    const mac = createHmac('sha256', SECRET).update(`${header}.${payload}`).digest('base64url');
    assertFails(run(`${header}.${payload}.${mac}`), 'malformed_signature');
  });
  test('not three parts is malformed', () => assertFails(run('abc.def'), 'malformed_signature'));
  test('a valid token for another body is a mismatch', async () => {
    assertFails(run(await jws({ iss: 'netlify', sha256: bodyHash(Buffer.from('{}')) }, SECRET)), 'signature_mismatch');
  });
});

describe('netlify: a hand-built token, pinned', () => {
  // Built with node:crypto from the table: base64url(header).base64url(claims).base64url(HMAC).
  const body = Buffer.from('{"event":"ping","n":1}');
  const token =
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.' +
    'eyJpc3MiOiJuZXRsaWZ5Iiwic2hhMjU2IjoiOTIzOWM0MjJhNDFiNTU1NDkzODQxZTQ5MjQwMWExM2M2MDgxMDQ1ZjQ5YmQ3MjIzZjU3NWM3ZTFmN2Q4NmY3ZiJ9.' +
    'PzRn1NgKRUHa4PtVkleY9WogmaSj0Lydwirnezf5IzA';
  test('the pinned token passes', () => assertOk(verify(netlify, { 'x-webhook-signature': token }, body, SECRET)));
});
