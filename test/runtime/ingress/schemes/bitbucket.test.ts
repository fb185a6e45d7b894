import { sign } from '@octokit/webhooks-methods';
import { describe, test } from 'node:test';
import { bitbucket } from '../../../../runtime/ingress/schemes/bitbucket.ts';
import { assertFails, assertOk, commonCases, githubPayload, verify } from './helpers.ts';

// Bitbucket puts GitHub's `sha256=<hex>` format under the legacy `X-Hub-Signature` name, so
// @octokit/webhooks-methods' output is a valid Bitbucket signature.
const signed = async (body: Buffer, secret: string) => ({ 'X-Hub-Signature': await sign(secret, body.toString('utf8')) });

describe('bitbucket: X-Hub-Signature sha256=<hex> (secondary sources)', () => {
  commonCases({ scheme: bitbucket, secret: 'bb-secret', body: githubPayload('push'), sign: signed, signatureHeader: 'X-Hub-Signature' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const hex = '8a9b36b6d7d58b10271701d3a8e96604ed6b396e0b1399f2206b20205219cad5';
  test('the pinned vector passes', () => assertOk(verify(bitbucket, { 'x-hub-signature': `sha256=${hex}` }, body, 'bb-secret')));
  test('the SHA-1 form is not accepted', () => {
    assertFails(verify(bitbucket, { 'x-hub-signature': `sha1=${hex.slice(0, 40)}` }, body, 'bb-secret'), 'malformed_signature');
  });
  test('the GitHub SHA-256 header name is not read', () => {
    assertFails(verify(bitbucket, { 'x-hub-signature-256': `sha256=${hex}` }, body, 'bb-secret'), 'missing_signature');
  });
});
