import type { SignatureScheme } from '../../../core/snapshot.ts';

/** Case-insensitive header lookup; the only view of a request a scheme gets (schemes are pure). */
export type Headers = { get(name: string): string | undefined };

/** Why a signature was refused. Stable codes: the ingress logs them, tests assert them. */
export type SchemeFailure =
  | 'missing_signature'
  | 'malformed_signature'
  | 'signature_mismatch'
  | 'missing_timestamp'
  | 'malformed_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'invalid_secret';

export type VerifyResult = { ok: true } | { ok: false; reason: SchemeFailure };

/** One provider scheme (docs/signatures.md). `verify` is pure and never throws. */
export interface SignatureSchemeImpl {
  id: SignatureScheme;
  /** Checks the raw body bytes against the headers with the provider secret at `now`. */
  verify(headers: Headers, body: Buffer, secret: string, now: Date): VerifyResult;
  /** The scheme's own delivery-id headers (docs/ingress.md#identity), lowercase, in order of preference. */
  deliveryIdHeaders: readonly string[];
  /** True when the scheme signs a timestamp, so the five-minute window applies (docs/signatures.md). */
  signsTimestamp: boolean;
  /**
   * The provider's handshake, for the few that send one (docs/signatures.md#handshakes): given an
   * authenticated delivery's parsed body, the answer it expects, or undefined for an ordinary delivery.
   */
  handshake?(json: unknown): Handshake | undefined;
}

/** A handshake recognised in a delivery: its kind (logged as the note) and the 200 JSON body to answer. */
export interface Handshake {
  kind: string;
  answer: Readonly<Record<string, unknown>>;
}

export const OK: VerifyResult = Object.freeze({ ok: true });

/** A failure result. */
export function fail(reason: SchemeFailure): VerifyResult {
  return { ok: false, reason };
}

/**
 * Adapts Node's IncomingHttpHeaders (lowercase keys, `string | string[]`) to `Headers`.
 * Repeated values are joined with `, ` as Node does for unknown headers, so a duplicated
 * signature header reaches a scheme as one value (which then usually fails to parse: refused).
 */
export function headersFrom(record: Readonly<Record<string, string | readonly string[] | undefined>>): Headers {
  const map = new Map<string, string>();
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined) continue;
    const text = typeof value === 'string' ? value : value.join(', ');
    const name = key.toLowerCase();
    const before = map.get(name);
    map.set(name, before === undefined ? text : `${before}, ${text}`);
  }
  return { get: (name) => map.get(name.toLowerCase()) };
}

/**
 * A header value without the spaces and tabs around it (HTTP's optional whitespace), and nothing
 * else: String.prototype.trim would also take a no-break space (byte 0xA0), so a signed id with one
 * added would verify as the same id while the delivery's identity, read from the same header, differs
 * (one signed message replayed as many deliveries). The identity reads headers through this too.
 */
export function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 32 || value.charCodeAt(start) === 9)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 32 || value.charCodeAt(end - 1) === 9)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** The value of a header without optional whitespace (trimOws), or undefined when absent or blank. */
export function headerValue(headers: Headers, name: string): string | undefined {
  const value = headers.get(name);
  if (typeof value !== 'string') return undefined;
  const trimmed = trimOws(value);
  return trimmed === '' ? undefined : trimmed;
}
