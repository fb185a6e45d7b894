import { explainFilter, formatPath } from '../../core/filter.ts';
import { triggerPayloadFilter, triggersFor, triggerWebhookUid, type MatchableAutomation } from './match.ts';

/**
 * Test filter (docs/automations.md), pure: for an automation and a stored delivery, would the
 * delivery start a run, with the webhook check and the payload check, and on a payload miss the
 * first failing key path and why. It decides with the same trigger selection as live matching
 * (match.ts) and the same evaluator (core/filter.ts `explainFilter`, kept in agreement with
 * `matchFilter` by test/core/filter.test.ts), so its answer is the live answer for an enabled
 * automation.
 */

export interface TestFilterWebhook {
  uid: string;
  name: string | null;
  /** Null when live. */
  deletedAt?: string | null;
  enabled?: boolean;
}

export interface WebhookCheck {
  passed: boolean;
  detail: string;
}

export interface PayloadCheck {
  passed: boolean;
  /** The trigger (index in `triggers`) the check used; absent when no trigger selects the webhook. */
  trigger?: number;
  /** On a miss: the failing key path in human form, e.g. `pull_request.labels[].name`. */
  path?: string;
  /** On a miss: the same path as its keys (`[]` stands for an array element). */
  path_segments?: string[];
  /** On a miss: why that key failed. */
  reason?: string;
  detail: string;
}

export interface TestFilterResult {
  would_trigger: boolean;
  webhook_check: WebhookCheck;
  payload_check: PayloadCheck;
  /** Live matching also needs the automation enabled (docs/automations.md); the checks above test its triggers. */
  automation_enabled: boolean;
  /** Why live deliveries would still start nothing, when that differs from `would_trigger`. */
  note?: string;
}

/**
 * Tests `automation`'s triggers against a delivery of `webhook` whose body parsed to `payload`.
 * `would_trigger` answers for the triggers (webhook and payload checks); `automation_enabled` and
 * `note` say when the automation itself is off, or its webhook gone, so nothing fires live.
 */
export function testFilter(automation: MatchableAutomation, webhook: TestFilterWebhook, payload: unknown, delivery: { handshake?: string } = {}): TestFilterResult {
  const label = webhook.name ? `webhook ${webhook.name} (${webhook.uid})` : `webhook ${webhook.uid}`;
  const selected = triggersFor(automation, webhook.uid);
  const notes: string[] = [];
  if (delivery.handshake !== undefined) notes.push(`the delivery is a provider handshake (${delivery.handshake}), which starts no run whatever the filters say`);
  if (!automation.enabled) notes.push('the automation is disabled, so live deliveries start no run until it is enabled');
  if (webhook.deletedAt) notes.push('the webhook is deleted, so it receives no more deliveries');
  else if (webhook.enabled === false) notes.push('the webhook is disabled, so it receives no deliveries until it is enabled');

  if (selected.length === 0) {
    const others = automation.triggers.map(triggerWebhookUid).filter((u): u is string => u !== undefined);
    return finish(
      { passed: false, detail: `no trigger selects ${label}, which received this delivery${others.length ? `; the triggers select ${others.join(', ')}` : ''}` },
      { passed: false, detail: 'not evaluated: no trigger selects this webhook, so no payload filter applies' },
      automation.enabled,
      notes,
    );
  }

  // Sentences count triggers from 1, as the compiler and plan do; the `trigger` field stays the index.
  const webhookCheck = { passed: true, detail: `trigger ${selected[0].index + 1} selects ${label}, which received this delivery` };
  let firstMiss: PayloadCheck | undefined;
  for (const { index, trigger } of selected) {
    const filter = triggerPayloadFilter(trigger);
    if (filter === undefined) {
      return finish(webhookCheck, { passed: true, trigger: index, detail: 'the trigger has no payload filter: every delivery of this webhook matches' }, automation.enabled, notes);
    }
    const explained = explainFilter(filter, payload);
    if (explained.matches) {
      return finish(webhookCheck, { passed: true, trigger: index, detail: 'the payload filter matches' }, automation.enabled, notes);
    }
    firstMiss ??= {
      passed: false,
      trigger: index,
      path: formatPath(explained.path),
      path_segments: explained.path,
      reason: explained.reason,
      detail: `${formatPath(explained.path) || '(the body)'}: ${explained.reason}`,
    };
  }
  return finish(webhookCheck, firstMiss!, automation.enabled, notes);
}

function finish(webhook: WebhookCheck, payload: PayloadCheck, enabled: boolean, notes: string[]): TestFilterResult {
  const wouldTrigger = webhook.passed && payload.passed;
  const out: TestFilterResult = { would_trigger: wouldTrigger, webhook_check: webhook, payload_check: payload, automation_enabled: enabled };
  if (wouldTrigger && notes.length) out.note = `Live, nothing would start: ${notes.join('; ')}.`;
  return out;
}
