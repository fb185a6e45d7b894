import { sign } from '@octokit/webhooks-methods';
import { describe, test } from 'node:test';
import { jira } from '../../../../runtime/ingress/schemes/jira.ts';
import { assertFails, assertOk, commonCases, verify } from './helpers.ts';

const signed = async (body: Buffer, secret: string) => ({ 'X-Hub-Signature': await sign(secret, body.toString('utf8')) });
const BODY = Buffer.from(JSON.stringify({ timestamp: 1748779200000, webhookEvent: 'jira:issue_created', issue: { key: 'FAC-1' } }));

describe('jira: X-Hub-Signature sha256=<hex> (secondary sources)', () => {
  commonCases({ scheme: jira, secret: 'jira-secret', body: BODY, sign: signed, signatureHeader: 'X-Hub-Signature' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const hex = '859fe60a2cc070e254146ed7beadbdbd875927a9a62fd10026b0e3ad3f60cfce';
  test('the pinned vector passes', () => assertOk(verify(jira, { 'x-hub-signature': `sha256=${hex}` }, body, 'jira-secret')));
  test('without the sha256= prefix it is malformed', () => {
    assertFails(verify(jira, { 'x-hub-signature': hex }, body, 'jira-secret'), 'malformed_signature');
  });
});
