import { createHmac } from 'node:crypto';
import { charCount } from './text.ts';

/**
 * Run notifications (docs/api.md#run-notifications), the pure parts: which URLs may be a target,
 * the operator's allow-list, the retry schedule, and the Standard Webhooks signature.
 */

export const NOTIFY_URL_MAX = 2048;
/** The event type of every notification. */
export const STATE_CHANGED = 'run.state_changed';

const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/**
 * Why `text` cannot be a notification URL, or undefined when it can: the rule of the API's run
 * creation, the compiler and apply alike (docs/api.md#run-notifications). Besides being an
 * absolute http(s) URL without credentials, it must be written as the URL parser gives it back
 * (lowercase scheme and host, no default port, spaces and the like %-escaped; only an origin may
 * leave out its `/`): a URL is stored and shown as given, so what a person reads is exactly where the
 * notifications go (`http:/x` would otherwise be shown as typed and sent to `http://x/`).
 */
export function notifyUrlProblem(text: unknown): string | undefined {
  const problem = unsendableUrl(text);
  if (problem !== undefined) return problem;
  const normal = new URL(text as string).href;
  // An origin without its `/` (`https://hooks.example.com`) names the same request: allowed as written.
  if (normal !== text && normal !== `${text as string}/`) return `must be written as the URL parser spells it, ${JSON.stringify(normal)}`;
  return undefined;
}

/**
 * Why no notification can be sent to `text`, or undefined: what the notifier checks before each
 * attempt. Looser than notifyUrlProblem, so a URL stored before that rule (as given, not as
 * the parser spells it) keeps being sent to.
 */
export function unsendableUrl(text: unknown): string | undefined {
  if (typeof text !== 'string' || text === '') return 'must be an http(s) URL';
  if (charCount(text) > NOTIFY_URL_MAX) return `must be at most ${NOTIFY_URL_MAX} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http(s) URL, got scheme "${url.protocol.slice(0, -1)}"`;
  // Credentials in the URL would be stored and shown with the run.
  if (url.username || url.password) return 'must not carry a user name or password';
  return undefined;
}

/** An allow-list entry: a host name or address, with a port or any port. */
export interface AllowEntry {
  host: string;
  port?: number;
}

/** `HOST` or `HOST:PORT` (`[::1]:8080` for IPv6); undefined when it is neither. */
export function parseAllowEntry(text: string): AllowEntry | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  // The host as a URL spells it, since notifyAllowed compares with the URL's: `[0:0:0:0:0:0:0:1]`
  // is `[::1]`, `10.0.0.010` is `10.0.0.8`, `127.1` is `127.0.0.1`.
  let host: string;
  try {
    host = new URL(`http://${m[1]}/`).hostname;
  } catch {
    return undefined;
  }
  // A name is dot-separated labels of letters, digits and inner hyphens (an IP literal is one already):
  // `-`, `.`, `..` or `a..b` could never equal a URL's host.
  if (!host.startsWith('[') && !/^(?!-)[a-z0-9-]{1,63}(?<!-)(?:\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/.test(host)) return undefined;
  return { host, ...(port !== undefined ? { port } : {}) };
}

/**
 * May a notification go to `url`? Everything may when there is no allow-list (null); with one,
 * the URL's host must equal an entry's host (no wildcards, no DNS: the name as written) and, when
 * the entry has a port, its port (80 or 443 when the URL gives none).
 */
export function notifyAllowed(url: string, allow: readonly AllowEntry[] | null): boolean {
  if (allow === null) return true;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  const host = u.hostname.toLowerCase();
  return allow.some((e) => e.host === host && (e.port === undefined || e.port === port));
}

/** Is `secret` a Standard Webhooks secret: `whsec_` + base64 of 24 to 64 bytes? */
export function isNotifySecret(secret: unknown): secret is string {
  if (typeof secret !== 'string') return false;
  const m = SECRET.exec(secret);
  if (!m || m[1].length % 4 !== 0) return false;
  const bytes = Buffer.from(m[1], 'base64');
  return bytes.length >= 24 && bytes.length <= 64;
}

/** The `webhook-signature` value: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` keyed by the secret's bytes. */
export function signNotification(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

/**
 * The delay before attempt n+1 after attempt n failed (n from 1), or undefined when n was the
 * last: `delays` has one entry per retry, so there are `delays.length + 1` attempts in all.
 */
export function nextDelayMs(delays: readonly number[], attempt: number): number | undefined {
  return attempt >= 1 && attempt <= delays.length ? delays[attempt - 1] : undefined;
}

/** `250ms`, `10s`, `3m` or a plain number of milliseconds; undefined when it is none of these. */
export function parseDelay(text: string): number | undefined {
  const m = /^(\d{1,9})(ms|s|m)?$/.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  return m[2] === 's' ? n * 1000 : m[2] === 'm' ? n * 60_000 : n;
}
