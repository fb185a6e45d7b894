import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { slack } from '../../../../runtime/ingress/schemes/slack.ts';
import { NOW_SECONDS, assertFails, assertOk, commonCases, verify, windowCases, without } from './helpers.ts';

// Written from the reference table: `v0=<hex HMAC-SHA256 of "v0:{ts}:{body}">`.
const signAt = (ts: number, body: Buffer, secret: string) => ({
  'X-Slack-Request-Timestamp': String(ts),
  'X-Slack-Signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:`).update(body).digest('hex')}`,
});
const BODY = Buffer.from('token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather&text=94070');
const SECRET = 'slack-secret';

describe('slack: X-Slack-Signature v0=<hex> over v0:{ts}:{body}', () => {
  commonCases({ scheme: slack, secret: SECRET, body: BODY, sign: (body, secret) => signAt(NOW_SECONDS, body, secret), signatureHeader: 'X-Slack-Signature' });
  windowCases({ scheme: slack, secret: SECRET, body: BODY, signAt });

  const body = Buffer.from('{"event":"ping","n":1}');
  const ts = 1748779200;
  const hex = '18bdaf2707bca76e39cf708f92dd789e71f94fe0737f8954f18150a8b4498d7b';
  const headers = { 'x-slack-request-timestamp': String(ts), 'x-slack-signature': `v0=${hex}` };
  const run = (h: Record<string, string>) => verify(slack, h, body, SECRET, new Date(ts * 1000));
  test('the pinned vector passes', () => assertOk(run(headers)));
  test('a missing timestamp header is missing_timestamp', () => assertFails(run(without(headers, 'x-slack-request-timestamp')), 'missing_timestamp'));
  test('a malformed timestamp is malformed_timestamp', () => {
    assertFails(run({ ...headers, 'x-slack-request-timestamp': 'yesterday' }), 'malformed_timestamp');
  });
  test('a changed timestamp is a mismatch', () => {
    assertFails(run({ ...headers, 'x-slack-request-timestamp': String(ts + 1) }), 'signature_mismatch');
  });
  test('a signature without v0= is malformed', () => assertFails(run({ ...headers, 'x-slack-signature': hex }), 'malformed_signature'));
});
