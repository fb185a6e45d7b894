import { describe, test } from 'node:test';
import { gitlab } from '../../../../runtime/ingress/schemes/gitlab.ts';
import { assertFails, assertOk, githubPayload, verify } from './helpers.ts';

// GitLab sends the secret itself; there is nothing to compute.
const signed = (_body: Buffer, secret: string) => ({ 'X-Gitlab-Token': secret });

describe('gitlab: X-Gitlab-Token equals the secret', () => {
  // The body is not signed, so helpers' commonCases (which flips a body byte) does not apply.
  const base = { secret: 'gl-token-8f2b', body: githubPayload('push') };
  test('a valid token passes', () => assertOk(verify(gitlab, signed(base.body, base.secret), base.body, base.secret)));
  test('a wrong token is a mismatch', () => assertFails(verify(gitlab, signed(base.body, 'gl-token-8f2c'), base.body, base.secret), 'signature_mismatch'));
  test('a prefix of the token is a mismatch', () => assertFails(verify(gitlab, signed(base.body, 'gl-token'), base.body, base.secret), 'signature_mismatch'));
  test('a longer token is a mismatch', () => assertFails(verify(gitlab, signed(base.body, `${base.secret}x`), base.body, base.secret), 'signature_mismatch'));
  test('a missing header is missing_signature', () => assertFails(verify(gitlab, {}, base.body, base.secret), 'missing_signature'));
  test('an empty secret is invalid_secret', () => assertFails(verify(gitlab, signed(base.body, ''), base.body, ''), 'invalid_secret'));
  test('the header name is case-insensitive', () => assertOk(verify(gitlab, { 'x-gitlab-token': base.secret }, base.body, base.secret)));
  test('the body is not part of the check', () => {
    assertOk(verify(gitlab, signed(base.body, base.secret), Buffer.from('anything'), base.secret));
  });
});
