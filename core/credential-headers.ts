/**
 * Headers that carry a credential: they may never be a webhook's `deliveryIdHeader`, whose value
 * is stored in the delivery log, shown by the API and the dashboard, and written to the access
 * log (docs/ingress.md, Identity). Pure; the compiler, the management API, apply and the ingress
 * all ask the same question here.
 *
 * A header is refused when it is one of CREDENTIAL_HEADERS (whatever the webhook's own auth mode
 * or scheme: simpler to reason about, and a webhook's scheme can change), or when one of the
 * words of its name (split on `-`, `_` and `.`) says it holds a credential, so that headers such as
 * `X-Gitlab-Token`, `X-Hook-Secret` or `X-Api-Key` of providers we do not know are refused too.
 */

/**
 * HTTP credentials, and every header a signature scheme of runtime/ingress/schemes/ reads a
 * signature, a token or a signed timestamp from (the schemes' own delivery-id headers, such as
 * `webhook-id`, are not credentials). Lowercase.
 */
export const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  // standard-webhooks
  'webhook-signature',
  'webhook-timestamp',
  'svix-signature',
  'svix-timestamp',
  // github, bitbucket, jira
  'x-hub-signature-256',
  'x-hub-signature',
  // gitlab
  'x-gitlab-token',
  // stripe, paddle, rootly (their timestamps are inside the signature header)
  'stripe-signature',
  'paddle-signature',
  'x-rootly-signature',
  // shopify, sentry, vercel, netlify, pagerduty
  'x-shopify-hmac-sha256',
  'sentry-hook-signature',
  'x-vercel-signature',
  'x-webhook-signature',
  'x-pagerduty-signature',
  // linear, slack
  'linear-signature',
  'linear-timestamp',
  'x-slack-signature',
  'x-slack-request-timestamp',
];

/** Words that, as a part of a header name, say the header holds a credential. */
const CREDENTIAL_WORDS = new Set([
  'auth',
  'authorization',
  'authentication',
  'token',
  'secret',
  'password',
  'passwd',
  'signature',
  'sig',
  'hmac',
  'cookie',
  'credential',
  'credentials',
  'jwt',
  'session',
  'apikey',
]);

const EXACT = new Set(CREDENTIAL_HEADERS);

/** True when `name` (any letter case) is a header that may carry a credential. */
export function isCredentialHeader(name: string): boolean {
  const lower = name.toLowerCase();
  if (EXACT.has(lower)) return true;
  const words = lower.split(/[-_.]+/);
  if (words.some((w) => CREDENTIAL_WORDS.has(w))) return true;
  // X-Api-Key, api_key: the two words together (a lone "key", as in Idempotency-Key, is an id).
  return words.some((w, i) => w === 'api' && words[i + 1] === 'key');
}

/** The one sentence every refusal uses, for a header `name` that isCredentialHeader. */
export function credentialHeaderMessage(name: string): string {
  return `'${name}' may carry a credential (a token, signature, key or cookie), and the delivery id header's value is stored and shown in the delivery log; name the sender's event id header instead`;
}
