import type { Context } from 'koa';
import { invalidRequest, notFound } from '../../core/errors.ts';
import { webhookView } from '../definitions/views.ts';
import { canManageFactory, principalOf, requireScope, type RequireScopeOptions } from '../http/auth.ts';
import { noBody, readJsonBody } from '../http/body.ts';
import {
  createWebhook,
  deleteWebhook,
  disableWebhook,
  enableWebhook,
  parseCreateWebhook,
  rotateWebhook,
  setWebhookSecret,
  type LifecycleResult,
  type SecretWriter,
  unknownWebhookDetail,
} from '../ingress/lifecycle.ts';
import { webhookUrlWithToken } from '../ingress/url.ts';
import { OUTCOME_LABELS, type DeliveryEntry } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import { deliveryRuns } from './automations.ts';
import type { RouteModule } from './index.ts';
import { queryParams } from '../http/query.ts';
import { echoed } from '../../core/text.ts';

/**
 * The webhook lifecycle (docs/ingress.md#webhook-lifecycle) and the delivery log
 * (docs/ingress.md#delivery-log) of the management API. Every route needs the `manage` scope for
 * the webhook's factory; a webhook of a factory the key may not manage answers exactly like an
 * unknown one (404).
 *
 *   POST   /api/v1/factories/:factory/webhooks         create (201; a generated secret shown once)
 *   POST   /api/v1/webhooks/:uid/enable | disable | rotate | secret
 *   DELETE /api/v1/webhooks/:uid
 *   GET    /api/v1/webhooks/:uid/deliveries            newest first; ?limit=1..100 (20), ?cursor
 *   GET    /api/v1/webhooks/:uid/deliveries/:delivery_id
 */
export const webhooksManageRoutes: RouteModule = (router, { store, config }) => {
  const factoryParam = { factory: (ctx: Context) => String(ctx.params.factory) };
  const view = (r: LifecycleResult) => {
    const out: Record<string, unknown> = { webhook: webhookView(r.webhook, config.baseUrl) };
    if (r.secret !== undefined) {
      // Shown once (docs/ingress.md#webhook-lifecycle): the runtime keeps only the sealed value from here on.
      out.secret = r.secret;
      if (r.webhook.authMode === 'url_token') out.url = webhookUrlWithToken(config.baseUrl, r.webhook.uid, r.secret);
    }
    if (r.nextStep) out.next_step = r.nextStep;
    return out;
  };
  /** A key limited to named factories may not write shared secrets (docs/runtime.md#secrets-and-webhooks). */
  const writerOf = (ctx: Context): SecretWriter => {
    const p = principalOf(ctx);
    return { factoryLimited: !p.scopes.includes('admin') && p.factories !== null };
  };
  const uidOf = (ctx: Context) => {
    const uid = String(ctx.params.uid);
    const w = store.defs.getWebhookByUid(uid);
    if (!w || !canManageFactory(principalOf(ctx), w.factory)) throw notFound(unknownWebhookDetail(uid));
    return uid;
  };

  router.post('/api/v1/factories/:factory/webhooks', requireScope('manage', factoryParam), async (ctx) => {
    const input = parseCreateWebhook(await readJsonBody(ctx, { limit: config.limits.apiBodyBytes }));
    const result = createWebhook(store, String(ctx.params.factory), input, config.limits.webhooksPerFactory, writerOf(ctx));
    ctx.status = 201;
    ctx.set('Location', `/api/v1/webhooks/${result.webhook.uid}`);
    ctx.body = view(result);
  });

  router.post('/api/v1/webhooks/:uid/enable', requireScope('manage', webhookFactory), noBody, (ctx) => {
    ctx.body = view(enableWebhook(store, uidOf(ctx)));
  });
  router.post('/api/v1/webhooks/:uid/disable', requireScope('manage', webhookFactory), noBody, (ctx) => {
    ctx.body = view(disableWebhook(store, uidOf(ctx)));
  });
  router.delete('/api/v1/webhooks/:uid', requireScope('manage', webhookFactory), noBody, (ctx) => {
    ctx.body = view(deleteWebhook(store, uidOf(ctx)));
  });
  router.post('/api/v1/webhooks/:uid/rotate', requireScope('manage', webhookFactory), async (ctx) => {
    const uid = uidOf(ctx);
    const body = await optionalBody(ctx, config.limits.apiBodyBytes);
    ctx.body = view(rotateWebhook(store, uid, secretField(body, false), writerOf(ctx)));
  });
  router.post('/api/v1/webhooks/:uid/secret', requireScope('manage', webhookFactory), async (ctx) => {
    const uid = uidOf(ctx);
    const body = await readJsonBody(ctx, { limit: config.limits.apiBodyBytes });
    ctx.body = view(setWebhookSecret(store, uid, secretField(body, true), writerOf(ctx)));
  });

  router.get('/api/v1/webhooks/:uid/deliveries', requireScope('manage', webhookFactory), queryParams(['limit', 'cursor']), (ctx) => {
    const uid = uidOf(ctx);
    const limit = intParam(ctx.query.limit, 'limit', 20, 1, 100);
    const cursor = ctx.query.cursor === undefined ? undefined : intParam(ctx.query.cursor, 'cursor', 0, 1, Number.MAX_SAFE_INTEGER);
    const rows = store.deliveries.list(uid, limit + 1, cursor);
    const page = rows.slice(0, limit);
    ctx.body = {
      deliveries: page.map((d) => ({ ...deliveryView(d), runs: deliveryRuns(store, d) })),
      page_info: { has_next_page: rows.length > limit, next_cursor: rows.length > limit ? String(page[page.length - 1].seq) : null },
    };
  });

  router.get('/api/v1/webhooks/:uid/deliveries/:delivery_id', requireScope('manage', webhookFactory), (ctx) => {
    const uid = uidOf(ctx);
    const id = String(ctx.params.delivery_id);
    const entry = store.deliveries.get(uid, id);
    if (!entry) throw notFound(`The webhook ${uid} has no delivery ${echoed(id)} in its log.`);
    ctx.type = 'application/json';
    ctx.body = deliveryDetailJson(entry, store);
  });
};


/**
 * The `:uid` webhook's factory, for the scope check of every route under /api/v1/webhooks/:uid: a
 * webhook of a factory the key may not manage is a 404 with unknownWebhookDetail's sentence,
 * before any body or query is checked. An unknown UID is the same 404 here, for every key.
 */
export const webhookFactory: RequireScopeOptions = {
  factory: (ctx) => ctx.deps.store.defs.getWebhookByUid(String(ctx.params.uid))?.factory ?? null,
  notFound: (ctx) => unknownWebhookDetail(String(ctx.params.uid)),
};

/** A log entry as the API shows it (docs/ingress.md#delivery-log), without its payload (see deliveryDetailJson). */
export function deliveryView(d: DeliveryEntry): Record<string, unknown> {
  return {
    delivery_id: d.deliveryId,
    webhook_uid: d.webhookUid,
    outcome: d.outcome,
    outcome_label: OUTCOME_LABELS[d.outcome],
    reason: d.reason,
    size: d.size,
    received_at: d.receivedAt,
    sender: d.sender,
    content_type: d.contentType,
    user_agent: d.userAgent,
    has_payload: d.hasPayload,
    // Which secret version authenticated it (two verify during a graceful rotation); null when rejected.
    secret_version: d.secretVersion,
  };
}

/**
 * The detail view as JSON bytes: deliveryView, the runs, and for an Accepted entry `payload`,
 * the stored body spliced in exactly as received. Those bytes were judged strict UTF-8 JSON at
 * the ingress (pipeline step 7, docs/ingress.md), which accepts any depth; parsing and
 * re-serialising them would show another text and, thousands of levels deep, overflow the stack (a
 * 500 for a valid delivery).
 */
export function deliveryDetailJson(d: DeliveryEntry, store: Store): Buffer {
  const rest = JSON.stringify({ ...deliveryView(d), runs: deliveryRuns(store, d) });
  if (!d.hasPayload) return Buffer.from(rest);
  const payload = store.deliveries.payload(d.seq) ?? Buffer.from('null');
  return Buffer.concat([Buffer.from(`${rest.slice(0, -1)},"payload":`), payload, Buffer.from('}')]);
}

async function optionalBody(ctx: Context, limit: number): Promise<unknown> {
  const length = ctx.get('Content-Length');
  if ((length === '' || length === '0') && !ctx.get('Transfer-Encoding')) return {};
  return readJsonBody(ctx, { limit });
}

function secretField(body: unknown, required: boolean): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (key !== 'secret') throw invalidRequest(`Unknown field "${key}"; only "secret" is accepted.`);
  if (b.secret === undefined && !required) return undefined;
  if (typeof b.secret !== 'string' || b.secret === '') {
    throw invalidRequest('The secret must be a non-empty string.', [{ pointer: '/secret', message: 'must be a non-empty string' }]);
  }
  return b.secret;
}

function intParam(v: unknown, name: string, fallback: number, min: number, max: number): number {
  if (v === undefined) return fallback;
  // One value: queryParams refuses a repeated parameter before this runs.
  const s = v;
  const n = typeof s === 'string' && /^\d{1,16}$/.test(s) ? Number(s) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw invalidRequest(`${name} must be an integer from ${min} to ${max}.`, [{ pointer: `/${name}`, message: `got ${JSON.stringify(s)}` }]);
  }
  return n;
}
