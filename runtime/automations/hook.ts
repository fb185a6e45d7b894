import type { AutomationRecord } from '../definitions/state.ts';
import type { AcceptedHook, IngressWebhook } from '../ingress/types.ts';
import type { AcceptedDelivery } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import type { NewRun } from '../store/runs.ts';
import { EVENT_PAYLOAD_FILE, runPrompt } from './envelope.ts';
import { compileAutomations, matchCompiled, parsePayload, type WebhookAutomations } from './match.ts';

/** Where an automation's runs report (docs/automations.md#notify): signed with its team secret, read at each send. */
export function automationNotify(automation: Pick<AutomationRecord, 'notify'>): NewRun['notify'] {
  return automation.notify ? { url: automation.notify.url, secretName: automation.notify.secretName } : null;
}

/**
 * What every run an automation starts carries, whatever started it: a delivery (`webhookRun`) or
 * a schedule (scheduler.ts).
 */
export function automationRunBase(automation: AutomationRecord): Pick<NewRun, 'environmentId' | 'title' | 'creator' | 'factory' | 'automation' | 'notify'> {
  return {
    environmentId: automation.environment,
    title: automation.title ?? automation.name,
    creator: { type: 'automation', name: automation.name },
    factory: automation.factory,
    automation: automation.name,
    notify: automationNotify(automation),
  };
}

/**
 * The run a matching automation starts for a delivery (docs/automations.md): the automation's
 * prompt plus the envelope, the body exactly as received attached as `event-payload.json`, `source:
 * WEBHOOK`, and the creator naming the automation.
 */
export function webhookRun(
  automation: AutomationRecord,
  webhook: Pick<IngressWebhook, 'uid' | 'name' | 'factory'>,
  delivery: Pick<AcceptedDelivery, 'seq' | 'deliveryId' | 'payload'>,
  /** The delivery's entry is written in the same transaction: the run reads the payload from it (store/runs.ts `NewRun`). */
  entryInThisTransaction = false,
): NewRun {
  return {
    prompt: runPrompt(automation.prompt, {
      factory: webhook.factory,
      automation: automation.name,
      webhook: { name: webhook.name, uid: webhook.uid },
      deliveryId: delivery.deliveryId,
    }),
    ...automationRunBase(automation),
    source: 'WEBHOOK',
    factory: webhook.factory,
    webhookUid: webhook.uid,
    deliveryId: delivery.deliveryId,
    deliverySeq: delivery.seq,
    attachments: [{ name: EVENT_PAYLOAD_FILE, bytes: delivery.payload, inEntry: entryInThisTransaction }],
  };
}

/**
 * The ingress hook of pipeline step 9 (docs/ingress.md#the-pipeline-step-by-step): called inside
 * the transaction that writes the Accepted delivery and its payload, it creates one QUEUED run per
 * matching automation with plain inserts (`store.runs.insertInTx`), so the delivery and its runs
 * commit together or not at all; a crash can neither lose the runs nor create them twice.
 * `afterCreate` is called when runs were created, still inside the transaction.
 *
 * The automations come compiled (match.ts `compileAutomations`), once per factory and definitions
 * generation (`store.defs.cachedAutomations`, rebuilt when an apply, enable, disable or delete
 * changes the generation): a delivery does work only for the automations of its own webhook, and
 * evaluates only filters its values can match. The list is fetched here, inside the transaction,
 * so an apply that disables or removes an automation takes effect for the next delivery committed
 * after it.
 */
export function automationsHook(store: Store, afterCreate?: () => void): AcceptedHook {
  // Keyed by the store's cached list itself: a new generation gives a new list, so the compiled
  // form follows the store's own invalidation, and the stale one is garbage with its list.
  const compiled = new WeakMap<readonly AutomationRecord[], Map<string, WebhookAutomations<AutomationRecord>>>();
  const automationsOf = (webhook: IngressWebhook) => {
    const automations = store.defs.cachedAutomations(webhook.factory);
    let byUid = compiled.get(automations);
    if (!byUid) compiled.set(automations, (byUid = compileAutomations(automations)));
    return byUid.get(webhook.uid);
  };
  return (webhook, delivery, body) => {
    // The ingress hands over the body it parsed at step 7; parsed here only when called without
    // it, and only when some filter of this webhook's automations needs it.
    const matched = matchCompiled(automationsOf(webhook), () => (body ? body.json : parsePayload(delivery.payload)));
    if (matched.length === 0) return;
    store.runs.insertInTx(matched.map((a) => webhookRun(a, webhook, delivery, true)));
    // Must not touch the store: the caller defers it past the commit (e.g. the executor's wake).
    afterCreate?.();
  };
}
