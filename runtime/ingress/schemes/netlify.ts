import { DIGEST_BYTES, decodeBase64Url, digestEquals, hmac, sha256 } from './hmac.ts';
import { type SignatureSchemeImpl, OK, fail, headerValue } from './types.ts';

/**
 * Netlify (secondary sources): `X-Webhook-Signature` is a JWS (HS256, keyed with the secret as
 * UTF-8) whose claims hold `iss: "netlify"` and `sha256` = hex SHA-256 of the body.
 * https://docs.netlify.com/site-deploys/deploy-notifications/#payload-signature
 *
 * Verified here with node:crypto rather than a JOSE library: only HS256 is accepted, so `none`
 * and every other `alg` (and any `crit` extension we cannot honour, RFC 7515 4.1.11) is refused
 * before the MAC is computed.
 */

/** Parses a base64url JSON object, or undefined. */
function jsonPart(part: string): Record<string, unknown> | undefined {
  const bytes = decodeBase64Url(part);
  if (bytes === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const netlify: SignatureSchemeImpl = {
  id: 'netlify',
  verify(headers, body, secret) {
    if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
    const token = headerValue(headers, 'x-webhook-signature');
    if (token === undefined) return fail('missing_signature');
    const parts = token.split('.');
    if (parts.length !== 3) return fail('malformed_signature');
    const [encodedHeader, encodedClaims, encodedSignature] = parts;
    const header = jsonPart(encodedHeader);
    if (header === undefined || header.alg !== 'HS256' || 'crit' in header) return fail('malformed_signature');
    const presented = decodeBase64Url(encodedSignature);
    if (presented === undefined || presented.length !== DIGEST_BYTES.sha256) return fail('malformed_signature');
    if (!digestEquals(presented, hmac('sha256', secret, `${encodedHeader}.${encodedClaims}`))) {
      return fail('signature_mismatch');
    }
    // The token is authentic from here on; its claims must bind it to this body.
    const claims = jsonPart(encodedClaims);
    if (claims === undefined || claims.iss !== 'netlify' || typeof claims.sha256 !== 'string') {
      return fail('malformed_signature');
    }
    const bodyHash = sha256(body);
    const claimed = Buffer.from(claims.sha256.toLowerCase(), 'utf8');
    return digestEquals(claimed, Buffer.from(bodyHash.toString('hex'), 'utf8')) ? OK : fail('signature_mismatch');
  },
  deliveryIdHeaders: [],
  signsTimestamp: false,
};
