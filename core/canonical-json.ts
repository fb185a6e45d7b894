import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by UTF-16 code unit order, `undefined` members dropped,
 * no whitespace. The same value always gives the same bytes, which is what makes
 * `factory build` deterministic and `digest` meaningful.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortDeep(value));
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) Object.defineProperty(out, key, { value: sortDeep(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/** `sha256:` + lowercase hex of the UTF-8 bytes (or the given bytes). */
export function sha256Digest(data: string | Uint8Array): string {
  return 'sha256:' + sha256Hex(data);
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
