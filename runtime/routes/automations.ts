import type { Context } from 'koa';
import { conflict, invalidRequest, notFound } from '../../core/errors.ts';
import { WEBHOOK_UID_PATTERN } from '../../core/ids.ts';
import { automationsHook } from '../automations/hook.ts';
import { parsePayload, triggerWebhookUid } from '../automations/match.ts';
import { testFilter } from '../automations/test-filter.ts';
import type { AutomationRecord, WebhookRecord } from '../definitions/state.ts';
import { runsQueued } from '../executor/lease-sweeper.ts';
import { canManageFactory, principalOf, requireScope } from '../http/auth.ts';
import { readJsonBody } from '../http/body.ts';
import { createIngressState } from '../ingress/state.ts';
import type { AcceptedHook } from '../ingress/types.ts';
import { handshakeKind, OUTCOME_LABELS, type DeliveryEntry } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import type { RunState } from '../../core/run-state.ts';
import type { RouteModule } from './index.ts';
import { queryParams } from '../http/query.ts';
import { echoed } from '../../core/text.ts';

/**
 * Automations (docs/automations.md) in the management API, scope `manage` for the factory:
 *
 *   GET  /api/v1/automations[?factory=F]            list, with `silent` when no trigger can fire
 *   GET  /api/v1/automations/:factory/:name          one automation
 *   POST /api/v1/automations/:factory/:name/test     Test filter: {delivery_id, webhook_uid?}
 *
 * This module also plugs run creation into the ingress: it adds `automationsHook` to the
 * ingress's `onAccepted` list (runtime/ingress/state.ts, shared through `services.ingress`), so
 * the runs of an Accepted delivery are written in its transaction (pipeline step 9,
 * docs/ingress.md).
 */
export const automationRoutes: RouteModule = (router, { config, store, clock, services }) => {
  const ingress = (services.ingress ??= createIngressState(config, store, clock));
  if (!ingress.onAccepted.some((h) => (h as MarkedHook)[HOOK_MARK])) {
    // Runs commit with the delivery; the executor and waiting workers are woken once the transaction is over.
    const hook = automationsHook(store, () => runsQueued(services)) as MarkedHook;
    hook[HOOK_MARK] = true;
    ingress.onAccepted.push(hook);
  }

  router.get('/api/v1/automations', requireScope('manage'), queryParams(['factory']), (ctx) => {
    const principal = principalOf(ctx);
    const factory = typeof ctx.query.factory === 'string' && ctx.query.factory !== '' ? ctx.query.factory : undefined;
    const automations = store.defs.listAutomations(factory).filter((a) => canManageFactory(principal, a.factory));
    const hooks = webhookIndex(store);
    ctx.body = { automations: automations.map((a) => automationView(a, hooks)) };
  });

  // A factory the key may not manage is found by findAutomation to have no such automation (404).
  router.get('/api/v1/automations/:factory/:name', requireScope('manage'), (ctx) => {
    ctx.body = automationView(findAutomation(store, ctx), webhookIndex(store));
  });

  router.post('/api/v1/automations/:factory/:name/test', requireScope('manage'), async (ctx) => {
    const automation = findAutomation(store, ctx);
    const input = parseTestRequest(await readJsonBody(ctx, { limit: config.limits.apiBodyBytes }));
    const { webhook, entry } = findDelivery(store, automation, input);
    const bytes = storedPayload(store, webhook, entry);
    const result = testFilter(automation, webhook, parsePayload(bytes), { handshake: handshakeKind(entry) });
    ctx.body = {
      automation: { factory: automation.factory, name: automation.name },
      delivery: {
        delivery_id: entry.deliveryId,
        webhook_uid: webhook.uid,
        webhook_name: webhook.name,
        outcome: entry.outcome,
        received_at: entry.receivedAt,
      },
      ...result,
    };
  });
};

const HOOK_MARK = Symbol('automations.hook');
type MarkedHook = AcceptedHook & { [HOOK_MARK]?: true };

/**
 * The runs an Accepted log entry started (docs/ingress.md#delivery-log), for the delivery log
 * routes. Other outcomes start nothing, so they list none (a Duplicate shares its id with the
 * Accepted entry).
 */
export function deliveryRuns(store: Store, d: DeliveryEntry): { run_id: string; automation: string | null; state: RunState }[] {
  return d.outcome === 'accepted' ? store.runs.byEntry(d.seq) : [];
}

type WebhookState = 'enabled' | 'disabled' | 'deleted' | 'unknown';

/** Every webhook, live or deleted, by UID: the state a trigger's UID is in. */
function webhookIndex(store: Store): Map<string, WebhookRecord> {
  return new Map(store.defs.listWebhooks(undefined, { includeDeleted: true }).map((w) => [w.uid, w]));
}

function stateOf(w: WebhookRecord | undefined, factory: string): WebhookState {
  // A UID of another factory's webhook never fires here (docs/automations.md: the webhook's own factory).
  if (!w || w.factory !== factory) return 'unknown';
  if (w.deletedAt) return 'deleted';
  return w.enabled ? 'enabled' : 'disabled';
}

/**
 * An automation as the API shows it. `silent` (docs/definitions.md,
 * docs/ingress.md#webhook-lifecycle): every trigger selects a deleted or unknown webhook, so
 * nothing can start it; a disabled webhook is not silent (it can be enabled).
 */
export function automationView(a: AutomationRecord, hooks: Map<string, WebhookRecord>) {
  const triggers = a.triggers.map((t) => {
    const uid = triggerWebhookUid(t) ?? null;
    const w = uid === null ? undefined : hooks.get(uid);
    const state = stateOf(w, a.factory);
    return { webhook_uid: uid, webhook_name: state === 'unknown' ? null : (w?.name ?? null), webhook_state: state, payload: t.filter?.payload ?? null };
  });
  const schedules = a.schedules ?? [];
  // A schedule always fires; an automation without webhook triggers or schedules (only triggers of
  // providers this runtime does not serve) never starts a run here.
  const silent = schedules.length === 0 && triggers.every((t) => t.webhook_state === 'deleted' || t.webhook_state === 'unknown');
  const out: Record<string, unknown> = {
    factory: a.factory,
    name: a.name,
    title: a.title,
    enabled: a.enabled,
    environment: a.environment,
    triggers,
    schedules,
    silent,
  };
  if (silent && triggers.length === 0) {
    out.silent_reason = 'it has no webhook trigger or schedule; triggers of other providers are not served by this runtime';
  } else if (silent) {
    const deleted = triggers.filter((t) => t.webhook_state === 'deleted').map((t) => t.webhook_uid);
    const unknown = triggers.filter((t) => t.webhook_state === 'unknown').map((t) => t.webhook_uid);
    const parts = [];
    if (deleted.length) parts.push(`deleted webhook${deleted.length > 1 ? 's' : ''} ${deleted.join(', ')}`);
    if (unknown.length) parts.push(`unknown webhook${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`);
    out.silent_reason = `every trigger selects a webhook that receives nothing: ${parts.join('; ')}`;
  }
  out.source_file = a.sourceFile;
  out.created_at = a.createdAt;
  out.updated_at = a.updatedAt;
  return out;
}

/**
 * The automation of the path, or 404; also for a factory the key may not manage, with the same
 * sentence, so the answer does not tell whether that factory or automation exists.
 */
function findAutomation(store: Store, ctx: Context): AutomationRecord {
  const factory = String(ctx.params.factory);
  const name = String(ctx.params.name);
  const a = store.defs.listAutomations(factory).find((x) => x.name === name);
  if (!a || !canManageFactory(principalOf(ctx), factory)) throw notFound(`The factory "${echoed(factory)}" has no automation "${echoed(name)}".`);
  return a;
}

interface TestRequest {
  deliveryId: string;
  webhookUid?: string;
}

function parseTestRequest(body: unknown): TestRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object.');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (key !== 'delivery_id' && key !== 'webhook_uid') {
      throw invalidRequest(`Unknown field "${key}"; expected delivery_id and optionally webhook_uid.`, [{ pointer: `/${key}`, message: 'unknown field' }]);
    }
  }
  if (typeof b.delivery_id !== 'string' || b.delivery_id === '') {
    throw invalidRequest('delivery_id is required: the id of a delivery in the log.', [{ pointer: '/delivery_id', message: 'must be a non-empty string' }]);
  }
  if (b.webhook_uid !== undefined && (typeof b.webhook_uid !== 'string' || !WEBHOOK_UID_PATTERN.test(b.webhook_uid))) {
    throw invalidRequest('webhook_uid must be a webhook UID (wh_...).', [{ pointer: '/webhook_uid', message: 'must be a webhook UID' }]);
  }
  return { deliveryId: b.delivery_id, webhookUid: b.webhook_uid as string | undefined };
}

/**
 * The delivery to test and the webhook it came in on. Without `webhook_uid`: the webhooks the
 * automation's triggers select are searched first, then the factory's other webhooks (live or
 * deleted), so a delivery of the wrong webhook is found and fails the webhook check rather than
 * 404. An id found on two webhooks of the same group asks for `webhook_uid`.
 */
function findDelivery(store: Store, automation: AutomationRecord, input: TestRequest): { webhook: WebhookRecord; entry: DeliveryEntry } {
  const factoryHooks = store.defs.listWebhooks(automation.factory, { includeDeleted: true });
  const byUid = new Map(factoryHooks.map((w) => [w.uid, w]));
  if (input.webhookUid !== undefined) {
    const webhook = byUid.get(input.webhookUid);
    if (!webhook) throw notFound(`The factory "${automation.factory}" has no webhook ${input.webhookUid}.`);
    const entry = store.deliveries.get(webhook.uid, input.deliveryId);
    if (!entry) throw notFound(`The webhook ${webhook.name} (${webhook.uid}) has no delivery "${echoed(input.deliveryId)}" in its log.`);
    return { webhook, entry };
  }
  const selected = [...new Set(automation.triggers.map(triggerWebhookUid))].filter((u): u is string => u !== undefined && byUid.has(u));
  const others = factoryHooks.map((w) => w.uid).filter((u) => !selected.includes(u));
  for (const group of [selected, others]) {
    const hits = group.flatMap((uid) => {
      const entry = store.deliveries.get(uid, input.deliveryId);
      return entry ? [{ webhook: byUid.get(uid)!, entry }] : [];
    });
    if (hits.length > 1) {
      throw invalidRequest(`Several webhooks have a delivery "${echoed(input.deliveryId)}" (${hits.map((h) => h.webhook.uid).join(', ')}); give webhook_uid.`, [
        { pointer: '/webhook_uid', message: 'required when the delivery id is ambiguous' },
      ]);
    }
    if (hits.length === 1) return hits[0];
  }
  throw notFound(`No webhook of the factory "${automation.factory}" has a delivery "${echoed(input.deliveryId)}" in its log.`);
}

/** The stored body, or a 409 that says why there is none (docs/ingress.md#the-pipeline-step-by-step: only Accepted entries keep it). */
function storedPayload(store: Store, webhook: WebhookRecord, entry: DeliveryEntry): Buffer {
  const label = `The delivery "${entry.deliveryId}" of webhook ${webhook.name} (${webhook.uid})`;
  if (entry.outcome !== 'accepted') {
    throw conflict(`${label} was logged as ${OUTCOME_LABELS[entry.outcome]}: only Accepted deliveries keep their payload, so there is nothing to test.`);
  }
  const bytes = entry.hasPayload ? store.deliveries.payload(entry.seq) : undefined;
  if (bytes === undefined) {
    throw conflict(`${label} no longer has its payload: the delivery log prunes payloads of older entries (docs/ingress.md#delivery-log).`);
  }
  return bytes;
}
