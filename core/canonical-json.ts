import * as crypto from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by UTF-16 code unit order, `undefined` members dropped,
 * no whitespace. The same value always gives the same bytes, which is what makes
 * `factory build` deterministic and `digest` meaningful.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortDeep(value));
}

function sortDeep(value: unknown, key = ''): unknown {
  value = asJson(value, key);
  if (Array.isArray(value)) return value.map((v, i) => sortDeep(v, String(i)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      // Members JSON leaves out; left in, a function named toJSON would be called on the copy.
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      // Plain assignment: objects with the same keys then share one shape, so a large snapshot
      // copies faster than by defining each property (docs/architecture.md#compile-speed).
      // Assigning __proto__ would set the prototype instead.
      if (k === '__proto__') Object.defineProperty(out, k, { value: sortDeep(v, k), enumerable: true, writable: true, configurable: true });
      else out[k] = sortDeep(v, k);
    }
    return out;
  }
  return value;
}

/**
 * What JSON.stringify serialises in place of `value`, before looking at its members: the result
 * of its toJSON (own or inherited, as a Date's), or the primitive in a String, Number or Boolean
 * object. So the keys of what a toJSON returns are sorted too.
 */
function asJson(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object') return value;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') value = toJSON.call(value, key);
  if (value instanceof String || value instanceof Number || value instanceof Boolean) return value.valueOf();
  return value;
}

/**
 * `JSON.parse(canonicalJson(value))` and that JSON text, without parsing it back: one copy with
 * sorted keys in which every value is already what JSON makes of it (undefined members dropped,
 * undefined and functions in arrays null, NaN and Infinity null, -0 zero). A snapshot is built
 * this way (docs/architecture.md#compile-speed). An object with a toJSON function, own or
 * inherited (a Date), or a String, Number or Boolean object takes the long way, through
 * `canonicalJson`, which serialises them as JSON.stringify does.
 */
export function canonicalCopy<T>(value: T): { copy: T; json: string } {
  try {
    const copy = jsonCopy(value) as T;
    return { copy, json: JSON.stringify(copy) };
  } catch (err) {
    if (err !== CALLS_TO_JSON) throw err;
    const json = canonicalJson(value);
    return { copy: JSON.parse(json) as T, json };
  }
}

const CALLS_TO_JSON = new Error('toJSON');

function jsonCopy(value: unknown): unknown {
  if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : null;
  if (typeof value === 'bigint') return JSON.stringify(value); // throws, as canonicalJson does
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v = jsonCopy(value[i]);
      out[i] = v === undefined || typeof v === 'function' || typeof v === 'symbol' ? null : v;
    }
    return out;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function' || value instanceof String || value instanceof Number || value instanceof Boolean) {
    throw CALLS_TO_JSON;
  }
  const out: Record<string, unknown> = {};
  for (const key of sortedKeys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || typeof v === 'symbol') continue;
    if (typeof v === 'function') continue;
    if (key === '__proto__') Object.defineProperty(out, key, { value: jsonCopy(v), enumerable: true, writable: true, configurable: true });
    else out[key] = jsonCopy(v);
  }
  return out;
}

/** Object.keys(value).sort(), without the sort when they are in order already (as most are). */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  for (let i = 1; i < keys.length; i++) if (keys[i - 1] > keys[i]) return keys.sort();
  return keys;
}

/** `sha256:` + lowercase hex of the UTF-8 bytes (or the given bytes). */
export function sha256Digest(data: string | Uint8Array): string {
  return 'sha256:' + sha256Hex(data);
}

/**
 * Lowercase hex sha256 of the UTF-8 bytes (or the given bytes). The one-shot `crypto.hash` (the
 * package needs Node 20.12 or later) costs much less than a Hash object for small inputs, which
 * the compiler hashes by the thousand and the ingress once per delivery.
 */
export function sha256Hex(data: string | Uint8Array): string {
  return crypto.hash('sha256', data, 'hex');
}
