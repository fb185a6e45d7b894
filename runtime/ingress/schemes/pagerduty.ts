import { anyDigestEquals, hmac } from './hmac.ts';
import { hexDigestsOf, parseParams } from './params.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * PagerDuty v3: `X-PagerDuty-Signature: v1=<hex>[,v1=<hex>…]`, HMAC-SHA256 of the body, one
 * entry per active secret; any match passes.
 * https://developer.pagerduty.com/docs/webhooks/webhook-signatures/
 */
export const pagerduty: SignatureSchemeImpl = {
  id: 'pagerduty',
  verify(headers, body, secret) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const value = headerValue(headers, 'x-pagerduty-signature');
    if (value === undefined) return fail('missing_signature');
    const presented = hexDigestsOf(parseParams(value, ','), 'v1');
    if (presented.length === 0) return fail('malformed_signature');
    return anyDigestEquals(presented, hmac('sha256', secret, body)) ? OK : fail('signature_mismatch');
  },
  deliveryIdHeaders: ['x-webhook-id'],
  signsTimestamp: false,
};
