import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { paddle } from '../../../../runtime/ingress/schemes/paddle.ts';
import { NOW_SECONDS, assertFails, assertOk, commonCases, verify, windowCases } from './helpers.ts';

// Written from the reference table: `ts=<unix>;h1=<hex HMAC-SHA256 of "{ts}:{body}">`.
const h1 = (ts: number, body: Buffer, secret: string) => createHmac('sha256', secret).update(`${ts}:`).update(body).digest('hex');
const signAt = (ts: number, body: Buffer, secret: string) => ({ 'Paddle-Signature': `ts=${ts};h1=${h1(ts, body, secret)}` });
const BODY = Buffer.from(JSON.stringify({ event_id: 'evt_01h', event_type: 'transaction.completed', data: { id: 'txn_01' } }));
const SECRET = 'pdl_ntfset_secret';

describe('paddle: Paddle-Signature ts=…;h1=…', () => {
  commonCases({ scheme: paddle, secret: SECRET, body: BODY, sign: (body, secret) => signAt(NOW_SECONDS, body, secret), signatureHeader: 'Paddle-Signature' });
  windowCases({ scheme: paddle, secret: SECRET, body: BODY, signAt });

  const body = Buffer.from('{"event":"ping","n":1}');
  const ts = 1748779200;
  const hex = 'a43d3e11d8b020b9e3c24f7250b6a8f59a7ad40d3c0a19c72497e31e3c1f53ce';
  const run = (header: string) => verify(paddle, { 'paddle-signature': header }, body, SECRET, new Date(ts * 1000));
  test('the pinned vector passes', () => assertOk(run(`ts=${ts};h1=${hex}`)));
  test('any of several h1 passes', () => {
    const other = h1(ts, body, 'pdl_ntfset_old');
    assertOk(run(`ts=${ts};h1=${other};h1=${hex}`));
    assertFails(run(`ts=${ts};h1=${other}`), 'signature_mismatch');
  });
  test('a missing ts is missing_timestamp', () => assertFails(run(`h1=${hex}`), 'missing_timestamp'));
  test('a non-numeric ts is malformed_timestamp', () => assertFails(run(`ts=1748779200.5;h1=${hex}`), 'malformed_timestamp'));
  test('no h1 is malformed', () => assertFails(run(`ts=${ts};h2=${hex}`), 'malformed_signature'));
  test("Stripe's `.` separator does not pass", () => {
    const dotted = createHmac('sha256', SECRET).update(`${ts}.`).update(body).digest('hex');
    assertFails(run(`ts=${ts};h1=${dotted}`), 'signature_mismatch');
  });
});
