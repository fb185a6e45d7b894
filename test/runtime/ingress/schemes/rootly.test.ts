import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { rootly } from '../../../../runtime/ingress/schemes/rootly.ts';
import { NOW_SECONDS, assertFails, assertOk, commonCases, verify, windowCases } from './helpers.ts';

// Written from the reference table: `t=<unix>,v1=<hex HMAC-SHA256 of "{t}{body}">`, no separator.
const v1 = (t: number, body: Buffer, secret: string) => createHmac('sha256', secret).update(`${t}`).update(body).digest('hex');
const signAt = (t: number, body: Buffer, secret: string) => ({ 'X-Rootly-Signature': `t=${t},v1=${v1(t, body, secret)}` });
const BODY = Buffer.from(JSON.stringify({ event: { id: 'evt_r1', type: 'incident.created' }, data: { id: 'inc_1' } }));
const SECRET = 'rootly-secret';

describe('rootly: X-Rootly-Signature t=…,v1=… over {t}{body}', () => {
  commonCases({ scheme: rootly, secret: SECRET, body: BODY, sign: (body, secret) => signAt(NOW_SECONDS, body, secret), signatureHeader: 'X-Rootly-Signature' });
  windowCases({ scheme: rootly, secret: SECRET, body: BODY, signAt });

  const body = Buffer.from('{"event":"ping","n":1}');
  const t = 1748779200;
  const hex = '10d5c297a29ebe57566808fb65ce6a9fd0f307e159e4070b48fef0ac5c4ba204';
  const run = (header: string) => verify(rootly, { 'x-rootly-signature': header }, body, SECRET, new Date(t * 1000));
  test('the pinned vector passes', () => assertOk(run(`t=${t},v1=${hex}`)));
  test('a `.` separator (Stripe style) does not pass', () => {
    const dotted = createHmac('sha256', SECRET).update(`${t}.`).update(body).digest('hex');
    assertFails(run(`t=${t},v1=${dotted}`), 'signature_mismatch');
  });
  test('a missing t is missing_timestamp', () => assertFails(run(`v1=${hex}`), 'missing_timestamp'));
  test('a changed t is a mismatch', () => assertFails(run(`t=${t - 1},v1=${hex}`), 'signature_mismatch'));
});
