/**
 * The ingress URL (docs/ingress.md#the-pipeline-step-by-step): `/webhooks/w/<uid>` and, for
 * url_token webhooks, `/webhooks/w/<uid>/<token>`. Pure: takes a path, says what it addresses. Log
 * lines redact the token segment with runtime/log.ts `redactUrl`.
 */

/** Where ingress routes live; everything under it is answered by the ingress pipeline. */
export const INGRESS_PREFIX = '/webhooks/w/';

export interface IngressPath {
  uid: string;
  /** The last path segment after the UID (url_token mode); undefined when there is none. */
  token?: string;
}

/**
 * Splits an ingress path. Returns undefined for a shape that can never be a webhook URL
 * (nothing after the prefix, or more than two segments): those are 404 like an unknown UID.
 * The query string, if any, must already be removed.
 */
export function parseIngressPath(path: string): IngressPath | undefined {
  if (!path.startsWith(INGRESS_PREFIX)) return undefined;
  const rest = path.slice(INGRESS_PREFIX.length);
  const parts = rest.split('/');
  if (parts.length > 2 || parts[0] === '') return undefined;
  if (parts.length === 1) return { uid: parts[0] };
  let token: string;
  try {
    token = decodeURIComponent(parts[1]);
  } catch {
    token = parts[1];
  }
  return { uid: parts[0], token };
}

/**
 * The full url_token URL with the token in it: shown once, at creation and rotation
 * (docs/ingress.md); everywhere else the URL shows `{token}` (runtime/definitions/views.ts
 * webhookUrl).
 */
export function webhookUrlWithToken(baseUrl: string, uid: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${INGRESS_PREFIX}${uid}/${encodeURIComponent(token)}`;
}
