import * as crypto from 'node:crypto';

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
      if (v === undefined) continue;
      // Plain assignment: objects with the same keys then share one shape, so a large snapshot
      // copies faster than by defining each property (docs/architecture.md#compile-speed).
      // Assigning __proto__ would set the prototype instead.
      if (key === '__proto__') Object.defineProperty(out, key, { value: sortDeep(v), enumerable: true, writable: true, configurable: true });
      else out[key] = sortDeep(v);
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
  // crypto.hash (Node 20.12 and later) is the one-shot form, much cheaper for thousands of small files.
  return oneShot ? oneShot('sha256', data, 'hex') : crypto.createHash('sha256').update(data).digest('hex');
}

const oneShot = (crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string }).hash;
