import { secretEquals } from './hmac.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * GitLab: `X-Gitlab-Token` is the secret itself, compared in constant time (digests of both,
 * so the length does not leak). https://docs.gitlab.com/user/project/integrations/webhooks/
 */
export const gitlab: SignatureSchemeImpl = {
  id: 'gitlab',
  verify(headers, _body, secret) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    // Whitespace around a field value is not part of it (RFC 9110 section 5.5).
    const token = headerValue(headers, 'x-gitlab-token');
    if (token === undefined) return fail('missing_signature');
    return secretEquals(token, secret) ? OK : fail('signature_mismatch');
  },
  deliveryIdHeaders: ['idempotency-key', 'x-gitlab-event-uuid'],
  signsTimestamp: false,
};
