import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * HMAC and comparison helpers shared by the schemes. Every check of a presented value against
 * a secret-derived one goes through `digestEquals` or `secretEquals`: constant time, and never
 * throws on a length mismatch (docs/signatures.md: every comparison is constant-time).
 */

export type HashAlgorithm = 'sha256' | 'sha1';

/** HMAC of the concatenated parts (strings as UTF-8, buffers as raw bytes). */
export function hmac(algorithm: HashAlgorithm, key: Buffer | string, ...parts: (string | Buffer)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** SHA-256 of bytes. */
export function sha256(data: Buffer | string): Buffer {
  return createHash('sha256').update(data).digest();
}

/**
 * Constant-time equality of a presented digest with the expected one. The expected length is
 * public (the hash's output size), so checking it first leaks nothing about the secret.
 */
export function digestEquals(presented: Buffer | undefined, expected: Buffer): boolean {
  if (presented === undefined || presented.length !== expected.length) return false;
  return timingSafeEqual(presented, expected);
}

/** True when any of the presented digests matches (multi-signature headers). */
export function anyDigestEquals(presented: readonly (Buffer | undefined)[], expected: Buffer): boolean {
  let found = false;
  // No early exit: every candidate is compared, so timing does not say which one matched.
  for (const candidate of presented) found = digestEquals(candidate, expected) || found;
  return found;
}

/**
 * Constant-time equality of two secret strings of any length: compares their SHA-256 digests,
 * so neither the content nor the length of the secret shows in the timing. The one secret
 * comparison of the ingress: `token` and `url_token` (pipeline.ts) and GitLab's token use it.
 */
export function secretEquals(presented: string, secret: string): boolean {
  return timingSafeEqual(sha256(presented), sha256(secret));
}

const HEX = /^[0-9a-fA-F]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Decodes hex of exactly `bytes` bytes, or undefined. Uppercase is accepted: it names the same
 * bytes, and the providers document lowercase only because that is what they send.
 */
export function decodeHex(text: string, bytes: number): Buffer | undefined {
  if (text.length !== bytes * 2 || !HEX.test(text)) return undefined;
  return Buffer.from(text, 'hex');
}

/** Decodes standard base64 (padding optional), or undefined when it is not base64. */
export function decodeBase64(text: string): Buffer | undefined {
  if (!BASE64.test(text)) return undefined;
  const core = text.replace(/=+$/, '');
  const padded = text.length !== core.length;
  if (core.length % 4 === 1 || (padded && text.length % 4 !== 0)) return undefined;
  return Buffer.from(text, 'base64');
}

/** Decodes base64url without padding (RFC 7515 section 2), or undefined. */
export function decodeBase64Url(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  return Buffer.from(text, 'base64url');
}

/** Output sizes in bytes. */
export const DIGEST_BYTES: Readonly<Record<HashAlgorithm, number>> = { sha256: 32, sha1: 20 };
