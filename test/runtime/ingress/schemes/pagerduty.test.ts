import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { pagerduty } from '../../../../runtime/ingress/schemes/pagerduty.ts';
import { assertFails, assertOk, commonCases, verify } from './helpers.ts';

// Written from the reference table: `v1=<hex HMAC-SHA256 of the body>`, one entry per secret.
const hexOf = (body: Buffer, secret: string) => createHmac('sha256', secret).update(body).digest('hex');
const signed = (body: Buffer, secret: string) => ({ 'X-PagerDuty-Signature': `v1=${hexOf(body, secret)}` });
const BODY = Buffer.from(JSON.stringify({ event: { id: '01DEN5JDW6GCB6PBA5QFHXR8VG', event_type: 'incident.triggered' } }));

describe('pagerduty: X-PagerDuty-Signature v1=<hex>[,v1=<hex>]', () => {
  commonCases({ scheme: pagerduty, secret: 'pd-secret', body: BODY, sign: signed, signatureHeader: 'X-PagerDuty-Signature' });

  const body = Buffer.from('{"event":"ping","n":1}');
  const hex = 'd3048950c4e2a0d645983ec0b1c0bbddfdbf2c7c6ac036cd502363f8c127830a';
  const run = (header: string) => verify(pagerduty, { 'x-pagerduty-signature': header }, body, 'pd-secret');
  test('the pinned vector passes', () => assertOk(run(`v1=${hex}`)));
  test('any entry of a multi-signature header passes (secret rotation)', () => {
    const old = hexOf(body, 'pd-old-secret');
    assertOk(run(`v1=${old},v1=${hex}`));
    assertOk(run(`v1=${hex}, v1=${old}`));
    assertFails(run(`v1=${old},v1=${old}`), 'signature_mismatch');
  });
  test('an entry without v1= is malformed', () => assertFails(run(hex), 'malformed_signature'));
});
