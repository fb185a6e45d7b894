import { anyDigestEquals, hmac } from './hmac.ts';
import { hexDigestsOf, parseParams, valuesOf } from './params.ts';
import { checkWindowSeconds, parseInteger } from './timestamp.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Rootly: `X-Rootly-Signature: t=<unix>,v1=<hex>` over `{t}{body}`, with NO separator between
 * the timestamp and the body (reference table).
 */
export const rootly: SignatureSchemeImpl = {
  id: 'rootly',
  verify(headers, body, secret, now) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const value = headerValue(headers, 'x-rootly-signature');
    if (value === undefined) return fail('missing_signature');
    const params = parseParams(value, ',');
    const stamps = valuesOf(params, 't');
    if (stamps.length === 0) return fail('missing_timestamp');
    if (stamps.length > 1) return fail('malformed_timestamp');
    const t = parseInteger(stamps[0]);
    if (t === undefined) return fail('malformed_timestamp');
    const presented = hexDigestsOf(params, 'v1');
    if (presented.length === 0) return fail('malformed_signature');
    if (!anyDigestEquals(presented, hmac('sha256', secret, stamps[0], body))) return fail('signature_mismatch');
    const late = checkWindowSeconds(t, now);
    return late === undefined ? OK : fail(late);
  },
  deliveryIdHeaders: [],
  signsTimestamp: true,
};
