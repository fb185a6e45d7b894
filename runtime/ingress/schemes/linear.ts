import { verifyBodyHex } from './body-hex.ts';
import { checkWindow, parseInteger } from './timestamp.ts';
import { type SchemeFailure, type SignatureSchemeImpl, fail, headerValue } from './types.ts';

/**
 * Linear: `Linear-Signature: <hex HMAC-SHA256 of the body>`. The timestamp is the body's
 * `webhookTimestamp` (Unix milliseconds), else the `Linear-Timestamp` header.
 * https://linear.app/developers/webhooks#securing-webhooks
 *
 * The body field comes first because it is covered by the signature; the header is not, so a
 * replayer could refresh it. The body is parsed only after the signature has passed, and only
 * to read that one field.
 */

/** Milliseconds from a `Linear-Timestamp` header; a value of 11 digits or fewer is taken as Unix seconds (11 digits of milliseconds would be 1973). */
function headerMillis(text: string): number | SchemeFailure {
  const value = parseInteger(text);
  if (value === undefined) return 'malformed_timestamp';
  return text.length <= 11 ? value * 1000 : value;
}

/** The body's `webhookTimestamp`: a number, absent (undefined), or present but not a timestamp. */
function bodyMillis(body: Buffer): number | undefined | SchemeFailure {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  if (!Object.hasOwn(parsed, 'webhookTimestamp')) return undefined;
  const value = (parsed as Record<string, unknown>).webhookTimestamp;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 'malformed_timestamp';
}

export const linear: SignatureSchemeImpl = {
  id: 'linear',
  verify(headers, body, secret, now) {
    const signed = verifyBodyHex({ header: 'linear-signature', prefix: '', algorithm: 'sha256' }, headers, body, secret);
    if (!signed.ok) return signed;
    let millis = bodyMillis(body);
    if (millis === undefined) {
      const header = headerValue(headers, 'linear-timestamp');
      if (header === undefined) return fail('missing_timestamp');
      millis = headerMillis(header);
    }
    if (typeof millis === 'string') return fail(millis);
    const late = checkWindow(millis, now);
    return late === undefined ? signed : fail(late);
  },
  deliveryIdHeaders: ['linear-delivery'],
  signsTimestamp: true,
};
