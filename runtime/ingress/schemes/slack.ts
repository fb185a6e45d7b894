import { DIGEST_BYTES, decodeHex, digestEquals, hmac } from './hmac.ts';
import { checkWindowSeconds, parseInteger } from './timestamp.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Slack: `X-Slack-Signature: v0=<hex>` over `v0:{ts}:{body}` with `X-Slack-Request-Timestamp`.
 * https://api.slack.com/authentication/verifying-requests-from-slack
 */
export const slack: SignatureSchemeImpl = {
  id: 'slack',
  verify(headers, body, secret, now) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const value = headerValue(headers, 'x-slack-signature');
    if (value === undefined) return fail('missing_signature');
    const stamp = headerValue(headers, 'x-slack-request-timestamp');
    if (stamp === undefined) return fail('missing_timestamp');
    const ts = parseInteger(stamp);
    if (ts === undefined) return fail('malformed_timestamp');
    if (!value.startsWith('v0=')) return fail('malformed_signature');
    const presented = decodeHex(value.slice(3), DIGEST_BYTES.sha256);
    if (presented === undefined) return fail('malformed_signature');
    if (!digestEquals(presented, hmac('sha256', secret, `v0:${stamp}:`, body))) return fail('signature_mismatch');
    const late = checkWindowSeconds(ts, now);
    return late === undefined ? OK : fail(late);
  },
  deliveryIdHeaders: [],
  signsTimestamp: true,
  /**
   * Events API URL verification: `{"type": "url_verification", "challenge": "..."}`, sent when the
   * Request URL is saved, signed like every event; Slack wants the challenge back with a 200
   * (https://api.slack.com/events/url_verification; JSON is one of the answers it takes).
   */
  handshake(json) {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
    const { type, challenge } = json as Record<string, unknown>;
    if (type !== 'url_verification' || typeof challenge !== 'string') return undefined;
    return { kind: 'url_verification', answer: { challenge } };
  },
};
