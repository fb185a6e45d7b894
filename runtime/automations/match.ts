import { matchFilter, type PayloadFilter } from '../../core/filter.ts';
import type { WebhookTrigger } from '../../core/snapshot.ts';
import type { AutomationRecord } from '../definitions/state.ts';

/**
 * Which automations a delivery starts (SPEC 8), pure: no store, no clock. The ingress hook
 * (hook.ts) and Test filter (test-filter.ts) both decide through the functions here and
 * core/filter.ts, so a Test filter answer is the live answer.
 */

/** The automation fields matching needs (an AutomationRecord has them all). */
export type MatchableAutomation = Pick<AutomationRecord, 'factory' | 'name' | 'enabled' | 'triggers'>;

/** The webhook a delivery came in on. */
export interface DeliveryWebhook {
  uid: string;
  factory: string;
}

// The ingress accepts strict UTF-8 only, without a BOM (pipeline.ts `isJson` uses the same
// decoder), so the body parses here exactly as it was judged to be JSON there.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The delivery body as the ingress parsed it at SPEC 7.1 step 7: strict UTF-8, then JSON.parse
 * (any JSON value). Throws on bytes the ingress would have rejected.
 */
export function parsePayload(bytes: Uint8Array): unknown {
  return JSON.parse(utf8.decode(bytes));
}

/** The UID a trigger selects: `filter.webhook_ids[0]` (SPEC 2: exactly one item). */
export function triggerWebhookUid(trigger: WebhookTrigger): string | undefined {
  if (trigger?.provider !== 'webhook' || trigger.event !== 'received') return undefined;
  const ids = trigger.filter?.webhook_ids;
  return Array.isArray(ids) && typeof ids[0] === 'string' ? ids[0] : undefined;
}

/** The trigger's payload filter; absent means every delivery of its webhook matches (SPEC 3). */
export function triggerPayloadFilter(trigger: WebhookTrigger): PayloadFilter | undefined {
  return trigger.filter?.payload;
}

/** The triggers of `automation` that select webhook `uid`, with their index. */
export function triggersFor(automation: Pick<MatchableAutomation, 'triggers'>, uid: string): { index: number; trigger: WebhookTrigger }[] {
  const out: { index: number; trigger: WebhookTrigger }[] = [];
  automation.triggers.forEach((trigger, index) => {
    if (triggerWebhookUid(trigger) === uid) out.push({ index, trigger });
  });
  return out;
}

/** Does any trigger selecting `uid` accept `payload`? (Enabled-ness is the caller's question.) */
export function triggersMatch(automation: Pick<MatchableAutomation, 'triggers'>, uid: string, payload: unknown): boolean {
  for (const { trigger } of triggersFor(automation, uid)) {
    const filter = triggerPayloadFilter(trigger);
    if (filter === undefined || matchFilter(filter, payload)) return true;
  }
  return false;
}

/**
 * The automations a delivery starts, one entry per automation (SPEC 8): every enabled automation
 * of the webhook's factory with a trigger that selects this webhook and whose payload filter
 * matches; an automation matches when any of its triggers does. `payload` is a thunk so that the
 * body is parsed at most once, and only when some automation listens to this webhook.
 */
export function matchingAutomations<A extends MatchableAutomation>(
  automations: readonly A[],
  webhook: DeliveryWebhook,
  payload: () => unknown,
): A[] {
  const candidates = automations.filter(
    (a) => a.enabled && a.factory === webhook.factory && triggersFor(a, webhook.uid).length > 0,
  );
  if (candidates.length === 0) return [];
  const body = payload();
  return candidates.filter((a) => triggersMatch(a, webhook.uid, body));
}
