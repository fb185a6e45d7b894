import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { newId, WEBHOOK_UID_PATTERN } from '../../core/ids.ts';
import type { ErrorCode } from '../../core/errors.ts';
import { iso, type Clock } from '../clock.ts';
import { HANDSHAKE_REASON, type AcceptedDelivery, type AcceptItem, type AcceptResult, type DeliveryFacts, type DeliveryOutcome, type RejectItem } from '../store/deliveries.ts';

/** The writes are built here as the group commit takes them (store/deliveries.ts `DeliveryWrite`): no copy per request. */
type Write<K extends string, T> = { kind: K } & T;
import { declaredLength, readCappedBody } from './body.ts';
import { bodyIdentity, headerIdentity, identityHeaderNames } from './identity.ts';
import type { IngressMetrics } from './metrics.ts';
import type { Limiter } from './rate-limit.ts';
import { SCHEMES } from './schemes/index.ts';
import { secretEquals } from './schemes/hmac.ts';
import type { SecretCache } from './secret-cache.ts';
import type { AcceptedHook, IngressWebhook, ParsedBody } from './types.ts';
import { parseIngressPath } from './url.ts';

/**
 * The ingress pipeline (docs/ingress.md#the-pipeline-step-by-step), framework-free: a request
 * (method, path, headers, sender, body stream) goes in, a response description comes out. The Koa
 * adapter (runtime/routes/ingress.ts) only copies it onto the response. Steps run in the documented
 * order; each is a guard clause that either answers or falls through to the next.
 */

export interface IngressDeps {
  clock: Clock;
  limits: { ingressBodyBytes: number };
  trustProxy: boolean;
  findWebhook(uid: string): IngressWebhook | undefined;
  secrets: SecretCache;
  limiter: Limiter;
  /**
   * Logs a rejected request; settles after the commit that holds the entry (the same group commit
   * as `accept`, so a flood of bad requests shares fsyncs instead of paying one each).
   */
  reject(item: Write<'reject', RejectItem>): Promise<unknown>;
  /**
   * Steps 8 and 9: claims the identity and writes Duplicate, or Accepted with its payload and
   * the hooks' runs, in one transaction; settles after the commit (runtime/store/group-commit.ts).
   */
  accept(item: Write<'accept', AcceptItem>): Promise<AcceptResult>;
  metrics: IngressMetrics;
  onAccepted: readonly AcceptedHook[];
}

export interface IngressRequest {
  method: string;
  /** The path without its query string, as received (not decoded). */
  path: string;
  headers: IncomingHttpHeaders;
  /** The socket's peer address. */
  remoteAddress: string | undefined;
  body: Readable;
}

export interface IngressResult {
  status: 200 | 202 | 400 | 401 | 404 | 405 | 408 | 413 | 429;
  headers: Record<string, string>;
  /** The 202 body, or a handshake's 200 answer (docs/signatures.md#handshakes). */
  body?: Readonly<Record<string, unknown>>;
  /** Everything but 202 answers with problem+json built from this. */
  problem?: { code: ErrorCode; detail: string };
  /** Set when the request body was not read to its end: the adapter discards or cuts the rest. */
  unread?: { read: number; declared?: number };
  /** What the delivery log holds for this request, when it was logged (for the access line). */
  logged?: { outcome: DeliveryOutcome; deliveryId: string; reason?: string | null };
}

const NOT_FOUND: IngressResult = Object.freeze({
  status: 404,
  headers: {},
  // One sentence for unknown, disabled and deleted webhooks alike (pipeline step 2).
  problem: { code: 'resource_not_found', detail: 'No webhook is at this address.' },
}) as IngressResult;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * An answer given before the body was read (404, 405, 429): the adapter then discards the body or,
 * past the drain limit, closes the connection, as after a 401 (docs/ingress.md, step 5); never
 * reads a body of any size to answer one of these.
 */
function beforeBody(result: IngressResult, req: IngressRequest): IngressResult {
  return { ...result, headers: { ...result.headers }, unread: { read: 0, declared: declaredLength(req.headers['content-length']) } };
}

/** Runs one request through the pipeline. Never throws for anything a sender can send. */
export async function handleIngress(req: IngressRequest, deps: IngressDeps): Promise<IngressResult> {
  const { metrics } = deps;
  const path = parseIngressPath(req.path);
  if (!path) {
    metrics.not_found += 1;
    return beforeBody(NOT_FOUND, req);
  }

  // 1. Method.
  if (req.method !== 'POST') {
    metrics.method_not_allowed += 1;
    return beforeBody(
      {
        status: 405,
        headers: { Allow: 'POST' },
        problem: { code: 'method_not_allowed', detail: 'A webhook accepts POST requests only.' },
      },
      req,
    );
  }

  // 2. Unknown, disabled or deleted: one identical 404. A token segment on a webhook that is not
  // url_token is a URL that does not exist either.
  const webhook = WEBHOOK_UID_PATTERN.test(path.uid) ? deps.findWebhook(path.uid) : undefined;
  if (!webhook || (path.token !== undefined && webhook.authMode !== 'url_token')) {
    metrics.not_found += 1;
    return beforeBody(NOT_FOUND, req);
  }
  const counts = metrics.webhook(webhook);

  // 3. Rate limits.
  const get = headerGetter(req.headers);
  const sender = senderAddress(req, deps.trustProxy);
  const rate = deps.limiter.take(webhook.uid, sender);
  if (!rate.ok) {
    counts.rate_limited += 1;
    return beforeBody({
      status: 429,
      headers: { 'Retry-After': String(rate.retryAfterSeconds) },
      problem: {
        code: 'rate_limited',
        detail:
          rate.budget === 'failed_auth'
            ? `Too many failed authentications from this address; retry after ${rate.retryAfterSeconds} seconds.`
            : `Too many deliveries from this address; retry after ${rate.retryAfterSeconds} seconds.`,
      },
    }, req);
  }

  const receivedAt = deps.clock.now();
  const scheme = webhook.authMode === 'signature' && webhook.signatureScheme ? SCHEMES[webhook.signatureScheme] : undefined;
  const idSources = identityNamesOf(webhook, scheme);
  const secret = webhook.secretVersion === null ? undefined : deps.secrets.get(webhook.secretName, webhook.secretVersion);
  // During a graceful rotation the version bound before verifies too, until its time is up
  // (docs/runtime.md#graceful-rotation). Both ISO 8601 UTC, so they compare as strings.
  const previous =
    webhook.previousSecretVersion != null && webhook.previousSecretUntil != null && iso(receivedAt) < webhook.previousSecretUntil
      ? deps.secrets.get(webhook.secretName, webhook.previousSecretVersion)
      : undefined;
  /** The version that authenticated the request, for the delivery log. */
  let secretVersion = webhook.secretVersion;
  const declared = declaredLength(get('content-length'));

  // Methods of an object literal, destructured, rather than `const f = () => ...`: run through
  // tsx, every named arrow made per request also gets its name set (esbuild keepNames), ~0.4 µs
  // apiece on the hot path (docs/ingress.md#constant-cost-per-delivery).
  const { facts, reject, rejectAuth } = {
    facts(deliveryId: string, size: number): DeliveryFacts {
      return {
        webhookUid: webhook.uid,
        deliveryId,
        size,
        receivedAt,
        sender,
        contentType: get('content-type'),
        userAgent: get('user-agent'),
        secretVersion,
      };
    },
    /**
     * Every rejection of a request to this webhook, in one place: counted, logged with its outcome
     * and reason (docs/ingress.md#the-pipeline-step-by-step), and answered with `answer` plus what
     * was logged (for the access line). Its id is the sender's when a header gives one, else the
     * body's hash, else a generated one.
     */
    async reject(
      outcome: RejectItem['outcome'],
      reason: string | null,
      seen: { body?: Buffer; size: number },
      answer: Omit<IngressResult, 'logged'>,
    ): Promise<IngressResult> {
      counts[outcome] += 1;
      const id = headerIdentity(get, idSources) ?? (seen.body ? bodyIdentity(seen.body) : newId('dlv'));
      await deps.reject({ kind: 'reject', facts: facts(id, seen.size), outcome, reason });
      return { ...answer, logged: { outcome, deliveryId: id, reason } };
    },
    rejectAuth(reason: string, body?: Buffer, unread?: IngressResult['unread']): Promise<IngressResult> {
      deps.limiter.failedAuth(webhook.uid, sender);
      return reject('rejected_auth', reason, { body, size: body?.length ?? declared ?? 0 }, {
        status: 401,
        headers: {},
        problem: { code: 'authentication_required', detail: 'The request could not be authenticated for this webhook.' },
        unread,
      });
    },
  };

  // 4. Header-only credentials, before a byte of the body is read.
  if (webhook.authMode === 'token' || webhook.authMode === 'url_token') {
    const given = webhook.authMode === 'token' ? bearer(get('authorization')) : path.token || undefined;
    const unread = { read: 0, declared };
    if (given === undefined) return rejectAuth('missing_credentials', undefined, unread);
    if (secret === undefined) return rejectAuth('secret_unavailable', undefined, unread);
    if (!secretEquals(given, secret)) {
      if (previous === undefined || !secretEquals(given, previous)) return rejectAuth('bad_credentials', undefined, unread);
      secretVersion = webhook.previousSecretVersion;
    }
  }

  // 5. The body, capped.
  const read = await readCappedBody(req.body, deps.limits.ingressBodyBytes, declared);
  if (!read.ok) {
    if (read.reason === 'aborted' || read.reason === 'timeout') {
      // The body did not all arrive: the sender closed the connection, or took longer than the
      // request timeout (then Node has answered 408 and closed it: runtime/http/client-error.ts).
      // It is still a request to an enabled webhook, so it is logged
      // (docs/ingress.md#the-pipeline-step-by-step): what arrived is not a JSON document.
      counts.aborted += 1;
      const late = read.reason === 'timeout';
      return reject('rejected_invalid_json', late ? 'body_timeout' : 'body_incomplete', { size: read.size }, {
        status: late ? 408 : 400,
        headers: {},
        problem: late
          ? { code: 'request_timeout', detail: 'The request did not arrive in time.' }
          : { code: 'invalid_json', detail: 'The request body ended before it was complete.' },
      });
    }
    return reject('rejected_too_large', null, { size: read.size }, {
      status: 413,
      headers: {},
      problem: { code: 'payload_too_large', detail: `The body is larger than ${deps.limits.ingressBodyBytes} bytes.` },
      unread: { read: declared !== undefined ? 0 : read.size, declared },
    });
  }
  const body = read.body;

  // 6. Signatures, on the raw bytes.
  if (webhook.authMode === 'signature') {
    if (!scheme) return rejectAuth('unknown_scheme', body);
    if (secret === undefined) return rejectAuth('secret_unavailable', body);
    const headers = {
      get(name: string) {
        return get(name.toLowerCase());
      },
    };
    let verdict = verifyWith(scheme, headers, body, secret, receivedAt);
    if (!verdict.ok && previous !== undefined) {
      const before = verifyWith(scheme, headers, body, previous, receivedAt);
      if (before.ok) {
        verdict = before;
        secretVersion = webhook.previousSecretVersion;
      } else if (verdict.reason === 'signature_mismatch' && (before.reason === 'timestamp_too_old' || before.reason === 'timestamp_in_future')) {
        // Signed with the previous secret but out of the window: the log says so, as it would
        // without a rotation (the window is checked only once a signature matches).
        verdict = before;
      }
    }
    if (!verdict.ok) return rejectAuth(verdict.reason, body);
  }

  // 7. UTF-8 JSON, any value. Parsed once; the hooks get this value (no second parse).
  const parsed = parseJson(body);
  if (!parsed) {
    // A byte-order mark is valid UTF-8 but not JSON's (RFC 8259: senders must not add one): said as such.
    const bom = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf;
    return reject('rejected_invalid_json', body.length === 0 ? 'empty' : bom ? 'byte_order_mark' : null, { body, size: body.length }, {
      status: 400,
      headers: {},
      problem: {
        code: 'invalid_json',
        detail: bom ? 'The body starts with a byte-order mark, which JSON does not allow (RFC 8259); send it without one.' : 'The body is not valid UTF-8 JSON.',
      },
    });
  }

  // 8 and 9. Identity, then Duplicate or Accepted, in one transaction under a UNIQUE key.
  const identity = headerIdentity(get, idSources) ?? bodyIdentity(body);

  // A provider's handshake (Slack's url_verification), authenticated like any delivery: answered
  // with what the provider expects, logged as Accepted with a note, and never a run.
  const handshake = scheme?.handshake?.(parsed.json);
  if (handshake) {
    const logged = await deps.accept({ kind: 'accept', facts: { ...facts(identity, body.length), note: HANDSHAKE_REASON + handshake.kind }, payload: body });
    counts.handshake += 1;
    return { status: 200, headers: {}, body: handshake.answer, logged: { outcome: logged.outcome, deliveryId: identity } };
  }
  const hooks = deps.onAccepted;
  const onAccepted =
    hooks.length === 0
      ? undefined
      : (delivery: AcceptedDelivery) => {
          for (const hook of hooks) hook(webhook, delivery, parsed);
        };
  // 202 only once this resolves, i.e. after the commit that holds the delivery (pipeline step 9).
  const result = await deps.accept({ kind: 'accept', facts: facts(identity, body.length), payload: body, onAccepted });
  counts[result.outcome] += 1;
  return { status: 202, headers: {}, body: { delivery_id: identity }, logged: { outcome: result.outcome, deliveryId: identity } };
}

/**
 * The identity header names of a served webhook (identity.ts `identityHeaderNames`), once per
 * record: the store hands out one frozen record per definitions generation, and any change to a
 * webhook makes a new one, so a record's names never go stale.
 */
const identityNames = new WeakMap<IngressWebhook, readonly string[]>();
function identityNamesOf(webhook: IngressWebhook, scheme: (typeof SCHEMES)[keyof typeof SCHEMES] | undefined): readonly string[] {
  let names = identityNames.get(webhook);
  if (!names) {
    names = identityHeaderNames({
      deliveryIdHeader: webhook.deliveryIdHeader,
      schemeHeaders: scheme ? scheme.deliveryIdHeaders : [],
      signed: webhook.authMode === 'signature',
    });
    identityNames.set(webhook, names);
  }
  return names;
}

/** A scheme's verdict on the raw bytes with `key`; a throw on hostile input is still just "not valid". */
function verifyWith(
  scheme: (typeof SCHEMES)[keyof typeof SCHEMES],
  headers: { get(name: string): string | undefined },
  body: Buffer,
  key: string,
  receivedAt: Date,
): { ok: true } | { ok: false; reason: string } {
  try {
    return scheme.verify(headers, body, key, receivedAt);
  } catch {
    return { ok: false, reason: 'malformed' };
  }
}

/** Strict UTF-8 (no replacement characters, no BOM) and JSON.parse of any value. */
export function isJson(body: Buffer): boolean {
  return parseJson(body) !== undefined;
}

/** The body's JSON value (boxed: `null` is a value), or undefined when not strict UTF-8 JSON. */
export function parseJson(body: Buffer): ParsedBody | undefined {
  try {
    return { json: JSON.parse(utf8.decode(body)) };
  } catch {
    return undefined;
  }
}

/**
 * The sender (docs/ingress.md#rate-limits): the socket's peer address, or behind a trusted proxy
 * the rightmost X-Forwarded-For entry, the address that proxy itself saw and appended. Entries to
 * its left were sent by the client and can say anything, so they never pick a rate-limit bucket. An
 * empty or unparsable last entry falls back to the socket address.
 */
export function senderAddress(req: Pick<IngressRequest, 'headers' | 'remoteAddress'>, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const list = Array.isArray(xff) ? xff.join(',') : xff;
    const last = list?.slice(list.lastIndexOf(',') + 1).trim();
    if (last && isIP(last) !== 0) return last;
  }
  return req.remoteAddress ?? 'unknown';
}

/** `Authorization: Bearer <secret>` → the secret, or undefined. */
function bearer(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const m = /^Bearer +(\S.*)$/i.exec(value);
  return m ? m[1] : undefined;
}

function headerGetter(headers: IncomingHttpHeaders): (lowercaseName: string) => string | undefined {
  return (name) => {
    const v = headers[name];
    if (v === undefined) return undefined;
    return Array.isArray(v) ? v.join(', ') : v;
  };
}
