import { anyDigestEquals, decodeBase64, hmac } from './hmac.ts';
import { checkWindowSeconds, parseInteger } from './timestamp.ts';
import { type Headers, type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Standard Webhooks (and Svix, its origin): `webhook-signature` holds space-separated
 * `v1,<base64>` entries over `{id}.{timestamp}.{body}`; any `v1` entry passes, other versions
 * (`v1a`) are ignored. The `svix-*` header set is accepted too (docs/signatures.md).
 * https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
 */

const PREFIX = 'whsec_';

/**
 * The HMAC key: the base64-decoded secret after stripping `whsec_` (the whole string when there
 * is no prefix). Not Stripe's rule, which keys with the whole string (reference: secrets).
 */
export function standardWebhooksKey(secret: string): Buffer | undefined {
  if (typeof secret !== 'string') return undefined;
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  const key = decodeBase64(encoded);
  return key === undefined || key.length === 0 ? undefined : key;
}

/**
 * The `webhook-*` set when any of its three headers is present, else the `svix-*` set. Chosen so
 * that the delivery's identity (`webhook-id`, then `svix-id`: `deliveryIdHeaders` below) is always
 * the id of the set that was verified: a `webhook-id` added beside a signed `svix-*` set makes the
 * request use the `webhook-*` set, which then has no valid signature, instead of giving a
 * replayed message a fresh, unsigned identity.
 */
function headerSet(headers: Headers): { id?: string; timestamp?: string; signature?: string } {
  const prefix = ['id', 'timestamp', 'signature'].some((h) => headerValue(headers, `webhook-${h}`) !== undefined) ? 'webhook' : 'svix';
  return {
    id: headerValue(headers, `${prefix}-id`),
    timestamp: headerValue(headers, `${prefix}-timestamp`),
    signature: headerValue(headers, `${prefix}-signature`),
  };
}

export const standardWebhooks: SignatureSchemeImpl = {
  id: 'standard-webhooks',
  verify(headers, body, secret, now) {
    const key = standardWebhooksKey(secret);
    if (key === undefined) return fail('invalid_secret');
    const { id, timestamp, signature } = headerSet(headers);
    if (signature === undefined) return fail('missing_signature');
    // The id is part of the signed content and is the delivery's identity; an empty one would
    // let the identity fall through to an unsigned header.
    if (id === undefined || id === '') return fail('malformed_signature');
    if (timestamp === undefined) return fail('missing_timestamp');
    const seconds = parseInteger(timestamp);
    if (seconds === undefined) return fail('malformed_timestamp');
    const presented: Buffer[] = [];
    for (const entry of signature.split(/\s+/)) {
      const comma = entry.indexOf(',');
      if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
      const digest = decodeBase64(entry.slice(comma + 1));
      if (digest !== undefined && digest.length === 32) presented.push(digest);
    }
    if (presented.length === 0) return fail('malformed_signature');
    // Header values reach us as one character per byte received (latin1): signing them as latin1
    // signs the bytes the sender sent, whatever they are.
    if (!anyDigestEquals(presented, hmac('sha256', key, Buffer.from(`${id}.${timestamp}.`, 'latin1'), body))) return fail('signature_mismatch');
    const late = checkWindowSeconds(seconds, now);
    return late === undefined ? OK : fail(late);
  },
  deliveryIdHeaders: ['webhook-id', 'svix-id'],
  signsTimestamp: true,
};
