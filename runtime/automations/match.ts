import { hasOperatorKey, hasOwn, isPlainObject, matchFilter, type PayloadFilter } from '../../core/filter.ts';
import type { WebhookTrigger } from '../../core/snapshot.ts';
import type { AutomationRecord } from '../definitions/state.ts';

/**
 * Which automations a delivery starts (docs/automations.md), pure: no store, no clock. The ingress
 * hook (hook.ts) and Test filter (test-filter.ts) both decide through the functions here and
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
 * The delivery body as the ingress parsed it at pipeline step 7 (docs/ingress.md): strict UTF-8,
 * then JSON.parse (any JSON value). Throws on bytes the ingress would have rejected.
 */
export function parsePayload(bytes: Uint8Array): unknown {
  return JSON.parse(utf8.decode(bytes));
}

/** The UID a trigger selects: `filter.webhook_ids[0]` (docs/definitions.md: exactly one item). */
export function triggerWebhookUid(trigger: WebhookTrigger): string | undefined {
  if (trigger?.provider !== 'webhook' || trigger.event !== 'received') return undefined;
  const ids = trigger.filter?.webhook_ids;
  return Array.isArray(ids) && typeof ids[0] === 'string' ? ids[0] : undefined;
}

/** The trigger's payload filter; absent means every delivery of its webhook matches (docs/filters.md). */
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
 * The automations a delivery starts, one entry per automation (docs/automations.md): every enabled
 * automation of the webhook's factory with a trigger that selects this webhook and whose payload
 * filter matches; an automation matches when any of its triggers does. `payload` is a thunk so that
 * the body is parsed at most once, and only when some automation listens to this webhook.
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

/*
 * The compiled form (built once per definitions generation, runtime/automations/hook.ts): for each
 * webhook, the enabled automations listening to it, and an index of their filters' equality
 * conditions, so that a delivery evaluates only the filters that can match it. With 2,000
 * automations whose filters test different values (`action: opened`, `repository: {full_name:
 * x}`, `ref: [a, b]`, `{in: [...]}`), a delivery looks up its own values and evaluates the few
 * filters that name them; the rest cost nothing. Filters without any equality condition (only
 * `exists` or `not_in`) are evaluated on every delivery. The answer is always what
 * `matchingAutomations` gives (a property test holds them together).
 */

/** One automation of a webhook: its filters there (undefined = no filter: everything matches). */
interface CompiledEntry<A> {
  automation: A;
  filters: (PayloadFilter | undefined)[];
}

/** A condition every match of a filter needs: the value at `path` holds one of `values` (docs/filters.md). */
interface Guard {
  path: string[];
  values: unknown[];
}

/** The automations of one webhook, compiled. */
export interface WebhookAutomations<A> {
  entries: CompiledEntry<A>[];
  /** Entries that must be evaluated whatever the payload (some trigger without a guard). */
  unguarded: number[];
  /** Guards by path (joined by NUL): for each value, the entries it can match. */
  guards: Map<string, { path: string[]; byValue: Map<unknown, number[]> }>;
  /** Some entry matches every payload (a trigger without a filter): no need to parse for it. */
  needsBody: boolean;
}

/**
 * An equality condition the filter cannot match without: the first key whose condition is a value,
 * a list, `{in: [...]}`, or a nested filter that has one. undefined when there is none.
 */
function guardOf(filter: unknown): Guard | undefined {
  if (!isPlainObject(filter)) return undefined;
  for (const key in filter) {
    if (!hasOwn(filter, key)) continue;
    const cond = filter[key];
    if (Array.isArray(cond)) return { path: [key], values: cond.filter(isScalarValue) };
    if (isPlainObject(cond)) {
      if (hasOperatorKey(cond)) {
        if (!hasOwn(cond, 'in')) continue;
        // A non-list `in` matches nothing (core/filter/evaluate.ts).
        return { path: [key], values: Array.isArray(cond.in) ? cond.in.filter(isScalarValue) : [] };
      }
      const inner = guardOf(cond);
      if (inner) return { path: [key, ...inner.path], values: inner.values };
      continue;
    }
    return { path: [key], values: isScalarValue(cond) ? [cond] : [] };
  }
  return undefined;
}

/** Only scalars can equal a payload value (`listHas`): objects in a list equal nothing. */
function isScalarValue(v: unknown): boolean {
  return v === null || typeof v !== 'object';
}

/**
 * Compiles the automations of one factory: by webhook UID, the enabled ones with a trigger that
 * selects it, in the order given (the order runs are created in).
 */
export function compileAutomations<A extends MatchableAutomation>(automations: readonly A[]): Map<string, WebhookAutomations<A>> {
  const byUid = new Map<string, WebhookAutomations<A>>();
  for (const automation of automations) {
    if (!automation.enabled) continue;
    const filtersByUid = new Map<string, (PayloadFilter | undefined)[]>();
    for (const trigger of automation.triggers) {
      const uid = triggerWebhookUid(trigger);
      if (uid === undefined) continue;
      const list = filtersByUid.get(uid) ?? [];
      list.push(triggerPayloadFilter(trigger));
      filtersByUid.set(uid, list);
    }
    for (const [uid, filters] of filtersByUid) {
      let plan = byUid.get(uid);
      if (!plan) byUid.set(uid, (plan = { entries: [], unguarded: [], guards: new Map(), needsBody: false }));
      const index = plan.entries.push({ automation, filters }) - 1;
      const guards = filters.map((f) => (f === undefined || !isPlainObject(f) ? undefined : guardOf(f)));
      if (guards.some((g) => g === undefined)) {
        plan.unguarded.push(index);
        if (filters.some((f) => f !== undefined && isPlainObject(f))) plan.needsBody = true;
        continue;
      }
      plan.needsBody = true;
      for (const g of guards as Guard[]) {
        const key = g.path.join('\u0000');
        let guard = plan.guards.get(key);
        if (!guard) plan.guards.set(key, (guard = { path: g.path, byValue: new Map() }));
        for (const value of g.values) {
          const list = guard.byValue.get(value);
          if (!list) guard.byValue.set(value, [index]);
          else if (list[list.length - 1] !== index) list.push(index);
        }
      }
    }
  }
  return byUid;
}

const UNDECIDED = Symbol('undecided');

/**
 * The value at `path` as a nested filter sees it: undefined when the filter cannot match (a key
 * missing, a body that is not an object), UNDECIDED when an array stands in the way (a nested
 * filter matches any of its object elements: the full evaluation decides).
 */
function valueAt(payload: unknown, path: string[]): unknown {
  let cur = payload;
  for (let i = 0; i < path.length; i++) {
    if (!isPlainObject(cur)) return i > 0 && Array.isArray(cur) ? UNDECIDED : undefined;
    if (!hasOwn(cur, path[i])) return undefined;
    cur = cur[path[i]];
  }
  return cur;
}

/**
 * The automations a delivery to this webhook starts, as `matchingAutomations` decides, doing work
 * only for the filters its values can match. `payload` is parsed at most once, and not at all when
 * no filter needs it.
 */
export function matchCompiled<A>(plan: WebhookAutomations<A> | undefined, payload: () => unknown): A[] {
  if (!plan || plan.entries.length === 0) return [];
  const body = plan.needsBody ? payload() : undefined;
  let candidates: number[];
  if (plan.guards.size === 0) {
    candidates = plan.unguarded;
  } else {
    const picked = new Set<number>(plan.unguarded);
    for (const guard of plan.guards.values()) {
      const value = valueAt(body, guard.path);
      if (value === undefined) continue;
      if (value === UNDECIDED) {
        for (const list of guard.byValue.values()) for (const i of list) picked.add(i);
      } else if (Array.isArray(value)) {
        for (const element of value) for (const i of guard.byValue.get(element) ?? []) picked.add(i);
      } else if (value === null || typeof value !== 'object') {
        for (const i of guard.byValue.get(value) ?? []) picked.add(i);
      }
    }
    candidates = [...picked].sort((a, b) => a - b);
  }
  const out: A[] = [];
  for (const i of candidates) {
    const { automation, filters } = plan.entries[i];
    for (const filter of filters) {
      if (filter === undefined || matchFilter(filter, body)) {
        out.push(automation);
        break;
      }
    }
  }
  return out;
}
