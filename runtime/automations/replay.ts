import { conflict, notFound } from '../../core/errors.ts';
import type { AutomationRecord, WebhookRecord } from '../definitions/state.ts';
import { handshakeKind, OUTCOME_LABELS, type DeliveryEntry } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import type { CreatorType, RunRecord } from '../store/runs.ts';
import { webhookRun } from './hook.ts';
import { compileAutomations, matchCompiled, parsePayload, triggersFor } from './match.ts';
import { echoed } from '../../core/text.ts';

/** Who asked for a replay: the API key's user or agent. */
export interface Replayer {
  type: CreatorType;
  name: string;
}

/**
 * Replays an Accepted delivery (docs/ingress.md#replay): its stored payload is matched again,
 * through the same compiled matching as the ingress (match.ts), against the automations of the
 * webhook's factory as they are NOW, and each match starts a new run recorded as a replay of the
 * delivery (`replay_of`, who asked). A replay is never a Duplicate: it does not go through the
 * identity check, and it adds no log entry; its runs show in the delivery's entry. `only` limits
 * it to one automation, which must listen to this webhook and match the payload (409 otherwise).
 * Returns the runs started, none when no automation matches now.
 */
export function replayDelivery(store: Store, webhook: WebhookRecord, entry: DeliveryEntry, by: Replayer, only?: string): RunRecord[] {
  const id = entry.deliveryId;
  if (entry.outcome !== 'accepted') {
    throw conflict(`The delivery ${id} was ${OUTCOME_LABELS[entry.outcome]}; only an Accepted delivery can be replayed.`);
  }
  const handshake = handshakeKind(entry);
  if (handshake !== undefined) {
    throw conflict(`The delivery ${id} is a provider handshake (${handshake}), which starts no run, so it cannot be replayed.`);
  }
  const payload = entry.hasPayload ? store.deliveries.payload(entry.seq) : undefined;
  if (!payload) throw conflict(`The payload of delivery ${id} is no longer stored, so it cannot be replayed.`);
  if (webhook.deletedAt) throw conflict(`The webhook ${webhook.uid} was deleted; its deliveries cannot be replayed.`);

  let automations: readonly AutomationRecord[] = store.defs.cachedAutomations(webhook.factory);
  if (only !== undefined) {
    const a = automations.find((x) => x.name === only);
    if (!a) throw notFound(`The factory "${webhook.factory}" has no automation "${echoed(only)}".`);
    if (!a.enabled) throw conflict(`The automation "${only}" is disabled; enable it to replay a delivery to it.`);
    if (triggersFor(a, webhook.uid).length === 0) throw conflict(`The automation "${only}" has no trigger on the webhook ${webhook.uid}.`);
    automations = [a];
  }
  const matched = matchCompiled(compileAutomations(automations).get(webhook.uid), () => parsePayload(payload));
  if (only !== undefined && matched.length === 0) {
    throw conflict(`The payload of delivery ${id} does not match the filters of the automation "${only}".`);
  }
  if (matched.length === 0) return [];
  return store.transaction(() =>
    store.runs.createInTx(matched.map((a) => ({ ...webhookRun(a, webhook, { seq: entry.seq, deliveryId: id, payload }), replay: { by } }))),
  );
}
