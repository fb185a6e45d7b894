import { sign } from '@octokit/webhooks-methods';
import { describe, test } from 'node:test';
import { github } from '../../../../runtime/ingress/schemes/github.ts';
import { assertFails, assertOk, commonCases, githubPayload, verify } from './helpers.ts';

const SECRET = "It's a Secret to Everybody";
const signed = async (body: Buffer, secret: string) => ({
  'X-Hub-Signature-256': await sign(secret, body.toString('utf8')),
});

describe('github: interop with @octokit/webhooks-methods', () => {
  commonCases({ scheme: github, secret: SECRET, body: githubPayload('push'), sign: signed, signatureHeader: 'X-Hub-Signature-256' });

  for (const name of ['pull_request.opened', 'issues.opened']) {
    test(`the real ${name} payload passes as raw bytes`, async () => {
      const body = githubPayload(name);
      assertOk(verify(github, await signed(body, SECRET), body, SECRET));
    });
  }
});

describe('github: known answers and format', () => {
  const body = Buffer.from('Hello, World!');
  const hex = '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

  test('the reference vector passes', () => {
    assertOk(verify(github, { 'x-hub-signature-256': `sha256=${hex}` }, body, SECRET));
  });
  test('uppercase hex names the same bytes and passes', () => {
    assertOk(verify(github, { 'x-hub-signature-256': `sha256=${hex.toUpperCase()}` }, body, SECRET));
  });
  test('the legacy sha1= prefix is malformed', () => {
    assertFails(verify(github, { 'x-hub-signature-256': `sha1=${hex}` }, body, SECRET), 'malformed_signature');
  });
  test('a bare hex without the prefix is malformed', () => {
    assertFails(verify(github, { 'x-hub-signature-256': hex }, body, SECRET), 'malformed_signature');
  });
  test('a truncated hex is malformed', () => {
    assertFails(verify(github, { 'x-hub-signature-256': `sha256=${hex.slice(0, 62)}` }, body, SECRET), 'malformed_signature');
  });
  test('a duplicated header (joined by Node) is refused', () => {
    assertFails(verify(github, { 'x-hub-signature-256': `sha256=${hex}, sha256=${hex}` }, body, SECRET), 'malformed_signature');
  });
  test('the signature only sits in X-Hub-Signature-256', () => {
    assertFails(verify(github, { 'x-hub-signature': `sha256=${hex}` }, body, SECRET), 'missing_signature');
  });
});
