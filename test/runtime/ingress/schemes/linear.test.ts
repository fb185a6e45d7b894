import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { linear } from '../../../../runtime/ingress/schemes/linear.ts';
import { NOW_SECONDS, assertFails, assertOk, commonCases, verify, windowCases } from './helpers.ts';

// Written from the reference table: hex HMAC-SHA256 of the body; timestamp in milliseconds in
// the body's `webhookTimestamp`, or the `Linear-Timestamp` header.
const hexOf = (body: Buffer, secret: string) => createHmac('sha256', secret).update(body).digest('hex');
const SECRET = 'lin_wh_secret';
const bodyAt = (seconds: number) =>
  Buffer.from(JSON.stringify({ action: 'create', type: 'Issue', data: { id: 'iss_1' }, webhookTimestamp: seconds * 1000 }));

describe('linear: Linear-Signature <hex>, webhookTimestamp in the body', () => {
  const body = bodyAt(NOW_SECONDS);
  commonCases({ scheme: linear, secret: SECRET, body, sign: (b, secret) => ({ 'Linear-Signature': hexOf(b, secret) }), signatureHeader: 'Linear-Signature' });

  const at = (offset: number) => {
    const b = bodyAt(NOW_SECONDS + offset);
    return verify(linear, { 'linear-signature': hexOf(b, SECRET) }, b, SECRET);
  };
  test('six minutes old is timestamp_too_old', () => assertFails(at(-360), 'timestamp_too_old'));
  test('six minutes ahead is timestamp_in_future', () => assertFails(at(360), 'timestamp_in_future'));
  test('4m59s old still passes', () => assertOk(at(-299)));
  test('4m59s ahead still passes', () => assertOk(at(299)));

  test('the signed body timestamp wins over a fresh header (a replay cannot refresh it)', () => {
    const b = bodyAt(NOW_SECONDS - 3600);
    const headers = { 'linear-signature': hexOf(b, SECRET), 'linear-timestamp': String(NOW_SECONDS * 1000) };
    assertFails(verify(linear, headers, b, SECRET), 'timestamp_too_old');
  });
  test('a non-numeric webhookTimestamp is malformed_timestamp', () => {
    const b = Buffer.from('{"type":"Issue","webhookTimestamp":"soon"}');
    assertFails(verify(linear, { 'linear-signature': hexOf(b, SECRET) }, b, SECRET), 'malformed_timestamp');
  });
  test('no timestamp anywhere is missing_timestamp', () => {
    const b = Buffer.from('{"type":"Issue"}');
    assertFails(verify(linear, { 'linear-signature': hexOf(b, SECRET) }, b, SECRET), 'missing_timestamp');
  });
  test('a signed body that is not JSON, without a header, is missing_timestamp', () => {
    const b = Buffer.from('not json');
    assertFails(verify(linear, { 'linear-signature': hexOf(b, SECRET) }, b, SECRET), 'missing_timestamp');
  });

  const pinnedBody = Buffer.from('{"action":"create","type":"Issue","webhookTimestamp":1748779200000}');
  const hex = 'd2834235ed9941bf4fc61a7af0729e679c407ea3df3604e78ad213d5ea37d653';
  test('the pinned vector passes', () => {
    assertOk(verify(linear, { 'linear-signature': hex }, pinnedBody, SECRET, new Date(1748779200000)));
  });
});

describe('linear: the Linear-Timestamp header when the body has no webhookTimestamp', () => {
  const body = Buffer.from(JSON.stringify({ action: 'update', type: 'Comment', data: { id: 'c_1' } }));
  windowCases({
    scheme: linear,
    secret: SECRET,
    body,
    signAt: (seconds, b, secret) => ({ 'Linear-Signature': hexOf(b, secret), 'Linear-Timestamp': String(seconds * 1000) }),
  });
  test('a header in Unix seconds is read as seconds', () => {
    const headers = { 'linear-signature': hexOf(body, SECRET), 'linear-timestamp': String(NOW_SECONDS) };
    assertOk(verify(linear, headers, body, SECRET));
  });
  test('a malformed header is malformed_timestamp', () => {
    const headers = { 'linear-signature': hexOf(body, SECRET), 'linear-timestamp': '2025-06-01T12:00:00Z' };
    assertFails(verify(linear, headers, body, SECRET), 'malformed_timestamp');
  });
});
