import { decodeBase64, digestEquals, hmac } from './hmac.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body>`.
 * https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook
 */
export const shopify: SignatureSchemeImpl = {
  id: 'shopify',
  verify(headers, body, secret) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const value = headerValue(headers, 'x-shopify-hmac-sha256');
    if (value === undefined) return fail('missing_signature');
    const presented = decodeBase64(value);
    if (presented === undefined || presented.length !== 32) return fail('malformed_signature');
    return digestEquals(presented, hmac('sha256', secret, body)) ? OK : fail('signature_mismatch');
  },
  deliveryIdHeaders: ['x-shopify-event-id', 'x-shopify-webhook-id'],
  signsTimestamp: false,
};
