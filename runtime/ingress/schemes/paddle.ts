import { anyDigestEquals, hmac } from './hmac.ts';
import { hexDigestsOf, parseParams, valuesOf } from './params.ts';
import { checkWindowSeconds, parseInteger } from './timestamp.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]` over `{ts}:{body}`; any
 * `h1` passes (several appear while a secret is being rotated).
 * https://developer.paddle.com/webhooks/signature-verification
 */
export const paddle: SignatureSchemeImpl = {
  id: 'paddle',
  verify(headers, body, secret, now) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const value = headerValue(headers, 'paddle-signature');
    if (value === undefined) return fail('missing_signature');
    const params = parseParams(value, ';');
    const stamps = valuesOf(params, 'ts');
    if (stamps.length === 0) return fail('missing_timestamp');
    if (stamps.length > 1) return fail('malformed_timestamp');
    const ts = parseInteger(stamps[0]);
    if (ts === undefined) return fail('malformed_timestamp');
    const presented = hexDigestsOf(params, 'h1');
    if (presented.length === 0) return fail('malformed_signature');
    if (!anyDigestEquals(presented, hmac('sha256', secret, `${stamps[0]}:`, body))) return fail('signature_mismatch');
    const late = checkWindowSeconds(ts, now);
    return late === undefined ? OK : fail(late);
  },
  deliveryIdHeaders: [],
  signsTimestamp: true,
};
