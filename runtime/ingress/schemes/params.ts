import { DIGEST_BYTES, type HashAlgorithm, decodeHex } from './hmac.ts';

/** One `key=value` item of a signature header such as Stripe's `t=…,v1=…`. */
export interface Param {
  key: string;
  value: string;
}

/**
 * Splits `k=v{sep}k=v…` into items, trimming whitespace around each. An item without `=` keeps
 * an empty key, so it matches nothing. Never throws.
 */
export function parseParams(header: string, separator: string): Param[] {
  return header.split(separator).map((item) => {
    const at = item.indexOf('=');
    if (at < 0) return { key: '', value: item.trim() };
    return { key: item.slice(0, at).trim(), value: item.slice(at + 1).trim() };
  });
}

/** The values of every item named `key`. */
export function valuesOf(params: readonly Param[], key: string): string[] {
  return params.filter((param) => param.key === key).map((param) => param.value);
}

/** Hex digests of the items named `key` that decode; malformed ones are dropped. */
export function hexDigestsOf(params: readonly Param[], key: string, algorithm: HashAlgorithm = 'sha256'): Buffer[] {
  const out: Buffer[] = [];
  for (const value of valuesOf(params, key)) {
    const digest = decodeHex(value, DIGEST_BYTES[algorithm]);
    if (digest !== undefined) out.push(digest);
  }
  return out;
}
