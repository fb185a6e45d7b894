import { sha256Digest } from '../../core/canonical-json.ts';
import { isCredentialHeader } from '../../core/credential-headers.ts';
import { trimOws } from './schemes/types.ts';

/**
 * Delivery identity (docs/ingress.md#identity), pure. The first of:
 * 1. the header named by the webhook's `deliveryIdHeader`, unless it may carry a credential
 *    (core/credential-headers.ts);
 * 2. the signature scheme's own delivery headers, in the scheme's order (signature mode only);
 * 3. `X-Service-Delivery-Id`, in token and URL-token modes only: no signature covers it, so in
 *    signature mode it would let anyone holding one signed request replay it as new deliveries;
 * 4. `sha256:` + hex of the raw body.
 * An empty header value counts as absent. Identities are per webhook; the caller scopes them.
 */

export const SERVICE_DELIVERY_ID_HEADER = 'x-service-delivery-id';

/** Longest header-supplied identity kept as is; longer ones are hashed to bound the index. */
export const MAX_IDENTITY_LENGTH = 200;

export interface IdentitySources {
  deliveryIdHeader?: string | null;
  /** Lowercase header names from the scheme (SCHEMES[scheme].deliveryIdHeaders). */
  schemeHeaders?: readonly string[];
  /** Signature mode: `X-Service-Delivery-Id` is not a source. */
  signed?: boolean;
}

/**
 * `.` and `..` are not ids: in a URL path (the API's, the dashboard's, the CLI's
 * `/deliveries/<id>`) clients remove them as dot segments, so such an entry could never be shown
 * or replayed. A header holding one counts as absent (docs/ingress.md#identity).
 */
const DOT_SEGMENT = /^\.\.?$/;

export type HeaderGetter = (lowercaseName: string) => string | undefined;

/**
 * The headers sources 1–3 are read from, lowercase, in order. Depends on the webhook only, so the
 * ingress works it out once per served webhook record, not per delivery.
 */
export function identityHeaderNames(sources: IdentitySources): readonly string[] {
  const names: string[] = [];
  // A credential header is refused at create and apply; one stored before that rule is skipped
  // here, so its value (a bearer token, a signature) never becomes a logged, listed delivery id.
  if (sources.deliveryIdHeader && !isCredentialHeader(sources.deliveryIdHeader)) names.push(sources.deliveryIdHeader.toLowerCase());
  for (const h of sources.schemeHeaders ?? []) names.push(h.toLowerCase());
  if (!sources.signed) names.push(SERVICE_DELIVERY_ID_HEADER);
  return names;
}

/** The identity from headers alone, or undefined when none of sources 1–3 is present. */
export function headerIdentity(get: HeaderGetter, sources: IdentitySources | readonly string[]): string | undefined {
  const names = Array.isArray(sources) ? (sources as readonly string[]) : identityHeaderNames(sources as IdentitySources);
  for (const name of names) {
    // Trimmed exactly as the signature schemes read the same header (schemes/types.ts trimOws).
    const v = get(name);
    const trimmed = v === undefined ? '' : trimOws(v);
    if (trimmed !== '' && !DOT_SEGMENT.test(trimmed)) return bounded(asSent(trimmed));
  }
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header value as the sender wrote it: Node gives header bytes one character each (latin1), so
 * an id sent as UTF-8 (`é`) would read `Ã©` and could not be looked up by what the sender sent.
 * Bytes that are valid UTF-8 are read as such; other bytes are named `sha256:` + the hex of their
 * hash, as an over-long id is. The same bytes always give the same id.
 */
function asSent(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  try {
    return utf8.decode(bytes);
  } catch {
    // Not UTF-8: its bytes as one character each could equal another id's UTF-8 reading (E9 and
    // C3 A9 would both be "é"), so such an id is named by the hash of its bytes instead.
    return bodyIdentity(bytes);
  }
}

/** The body-derived identity, source 4. */
export function bodyIdentity(body: Buffer): string {
  return sha256Digest(body);
}

function bounded(v: string): string {
  if (v.length <= MAX_IDENTITY_LENGTH) return v;
  return bodyIdentity(Buffer.from(v));
}
