import { DIGEST_BYTES, type HashAlgorithm, decodeHex, digestEquals, hmac } from './hmac.ts';
import { type Headers, type VerifyResult, OK, fail, headerValue } from './types.ts';

/** How a provider that signs only the body with a hex HMAC in one header lays it out. */
export interface BodyHexLayout {
  header: string;
  /** The literal before the hex, e.g. `sha256=`; '' when none. */
  prefix: string;
  algorithm: HashAlgorithm;
}

/**
 * The shared check for github, bitbucket, jira, sentry, vercel and linear: one header holding
 * `{prefix}{hex HMAC of the raw body}` keyed with the secret as UTF-8.
 */
export function verifyBodyHex(layout: BodyHexLayout, headers: Headers, body: Buffer, secret: string): VerifyResult {
  if (typeof secret !== 'string' || secret === '') return fail('invalid_secret');
  const value = headerValue(headers, layout.header);
  if (value === undefined) return fail('missing_signature');
  if (!value.startsWith(layout.prefix)) return fail('malformed_signature');
  const presented = decodeHex(value.slice(layout.prefix.length), DIGEST_BYTES[layout.algorithm]);
  if (presented === undefined) return fail('malformed_signature');
  return digestEquals(presented, hmac(layout.algorithm, secret, body)) ? OK : fail('signature_mismatch');
}
