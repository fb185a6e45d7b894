/**
 * The shape of each runtime answer the CLI reads: the fields its commands use, with their types.
 * The client checks every 2xx answer against its route's shape before a command sees it, so an
 * answer of another shape (another server, or a runtime of another version) is named as such in
 * one sentence, with --json or not, and before anything is printed (README.md#commands).
 *
 * A shape lists only what the CLI relies on: a field it does not read may be missing, and extra
 * fields are welcome. A test holds each shape to the answer schema of schemas/api/, so a shape never
 * asks for more than a runtime of this version gives.
 */

/** A field's type; `T|null` also takes null. */
type Scalar = 'string' | 'number' | 'boolean' | 'object' | 'string|null' | 'number|null' | 'object|null';

/** A JSON value's shape: a scalar type, a list of one shape (`[X]`), or an object's fields (a name ending in `?` may be missing). */
export type Shape = Scalar | readonly [Shape] | { readonly [field: string]: Shape } | Nullable;

const NULL_OK: unique symbol = Symbol('null ok');
interface Nullable {
  readonly [NULL_OK]: Shape;
}
/** An object or list shape that may also be null. */
const orNull = (shape: Shape): Nullable => ({ [NULL_OK]: shape });

const WEBHOOK = {
  uid: 'string', name: 'string', factory: 'string', url: 'string', auth_mode: 'string', signature_scheme: 'string|null',
  enabled: 'boolean', secret_name: 'string', secret_version: 'number|null', managed_by: 'string', deleted_at: 'string|null',
} as const;
const WEBHOOK_CHANGE = { webhook: WEBHOOK, 'secret?': 'string', 'url?': 'string', 'next_step?': 'string' } as const;
const DELIVERY_RUN = { run_id: 'string', automation: 'string|null', state: 'string', 'replay?': { by: { name: 'string' } } } as const;
const DELIVERY_ROW = { delivery_id: 'string', outcome_label: 'string', size: 'number', received_at: 'string', 'runs?': [DELIVERY_RUN] } as const;
const DELIVERY = {
  ...DELIVERY_ROW, outcome: 'string', reason: 'string|null', 'secret_version?': 'number|null',
  sender: 'string|null', content_type: 'string|null', user_agent: 'string|null',
} as const;
const AUTOMATION = {
  factory: 'string', name: 'string', enabled: 'boolean', environment: 'string', silent: 'boolean', 'silent_reason?': 'string',
  triggers: [{ webhook_uid: 'string|null', webhook_name: 'string|null', webhook_state: 'string' }],
} as const;
const SCHEDULE = {
  id: 'string', name: 'string', cron_schedule: 'string', enabled: 'boolean', paused: 'object|null',
  history: { next_run: 'string|null' }, factory: 'string', automation: 'string',
} as const;
const CHECK = { passed: 'boolean', detail: 'string' } as const;
const AUTOMATION_TEST = {
  would_trigger: 'boolean', webhook_check: CHECK, payload_check: { ...CHECK, 'path?': 'string', 'reason?': 'string' }, 'note?': 'string',
} as const;
const KEY = { id: 'string', name: 'string', kind: 'string', scopes: ['string'], factories: orNull(['string']), created_at: 'string', revoked_at: 'string|null' } as const;
const SECRET = { name: 'string', current_version: 'number', has_value: 'boolean', factories: orNull(['string']), updated_at: 'string' } as const;
const RUN = {
  run_id: 'string', state: 'string', title: 'string', config: { environment_id: 'string' }, source: 'string',
  creator: { type: 'string', name: 'string' }, created_at: 'string', status_message: 'string|null', session_link: 'string|null',
  'retry_of?': 'string',
  'replay_of?': { webhook_uid: 'string', delivery_id: 'string', by: { type: 'string', name: 'string' } },
  'webhook?': { url: 'string' },
  'notifications?': [{
    state: 'string', status: 'string', next_attempt_at: 'string|null',
    attempts: [{ at: 'string', status_code: 'number|null', error: 'string|null' }],
  }],
} as const;
const SUMMARY = { create: 'number', update: 'number', delete: 'number', no_op: 'number' } as const;
const CHANGE = { resource: 'string', name: 'string', action: 'string', file: 'string', 'diff?': [{ field: 'string' }] } as const;
const PLAN_PARTS = { factory: 'string', base_revision: 'string', revision: 'string|null', summary: SUMMARY, changes: [CHANGE], notes: ['string'] } as const;

/**
 * Each route the CLI reads, as the OpenAPI document names it (`{uid}` is one path segment), with
 * the shape of its success answer. A route not listed is only checked to answer a JSON object.
 */
export const ANSWER_SHAPES: readonly { method: string; path: string; shape: Shape }[] = [
  { method: 'POST', path: '/api/v1/factories/{factory}/plan', shape: { ...PLAN_PARTS, changed: 'boolean' } },
  { method: 'POST', path: '/api/v1/factories/{factory}/apply', shape: { ...PLAN_PARTS, applied: 'boolean', webhooks: [{ name: 'string', enabled: 'boolean', url: 'string' }] } },
  { method: 'GET', path: '/api/v1/webhooks', shape: { webhooks: [WEBHOOK] } },
  { method: 'GET', path: '/api/v1/webhooks/{uid}', shape: WEBHOOK },
  { method: 'POST', path: '/api/v1/factories/{factory}/webhooks', shape: WEBHOOK_CHANGE },
  { method: 'POST', path: '/api/v1/webhooks/{uid}/enable', shape: WEBHOOK_CHANGE },
  { method: 'POST', path: '/api/v1/webhooks/{uid}/disable', shape: WEBHOOK_CHANGE },
  { method: 'POST', path: '/api/v1/webhooks/{uid}/rotate', shape: WEBHOOK_CHANGE },
  { method: 'POST', path: '/api/v1/webhooks/{uid}/secret', shape: WEBHOOK_CHANGE },
  { method: 'DELETE', path: '/api/v1/webhooks/{uid}', shape: WEBHOOK_CHANGE },
  { method: 'GET', path: '/api/v1/webhooks/{uid}/deliveries', shape: { deliveries: [DELIVERY_ROW] } },
  { method: 'GET', path: '/api/v1/webhooks/{uid}/deliveries/{delivery_id}', shape: DELIVERY },
  { method: 'POST', path: '/api/v1/webhooks/{uid}/deliveries/{delivery_id}/replay', shape: { runs: [DELIVERY_RUN], 'detail?': 'string' } },
  { method: 'GET', path: '/api/v1/automations', shape: { automations: [AUTOMATION] } },
  { method: 'POST', path: '/api/v1/automations/{factory}/{name}/test', shape: AUTOMATION_TEST },
  { method: 'GET', path: '/api/v1/agent/schedules', shape: { schedules: [SCHEDULE] } },
  { method: 'GET', path: '/api/v1/agent/schedules/{schedule_id}', shape: SCHEDULE },
  { method: 'POST', path: '/api/v1/agent/schedules/{schedule_id}/pause', shape: SCHEDULE },
  { method: 'POST', path: '/api/v1/agent/schedules/{schedule_id}/resume', shape: SCHEDULE },
  { method: 'POST', path: '/api/v1/keys', shape: { ...KEY, key: 'string' } },
  { method: 'GET', path: '/api/v1/keys', shape: { keys: [KEY] } },
  { method: 'POST', path: '/api/v1/keys/{key_id}/revoke', shape: KEY },
  { method: 'POST', path: '/api/v1/secrets', shape: SECRET },
  { method: 'GET', path: '/api/v1/secrets', shape: { secrets: [SECRET] } },
  { method: 'GET', path: '/api/v1/secrets/{name}', shape: SECRET },
  {
    method: 'PUT', path: '/api/v1/secrets/{name}',
    shape: { ...SECRET, 'grace?': { until: 'string|null', webhooks: [{ factory: 'string', name: 'string' }] } },
  },
  { method: 'PUT', path: '/api/v1/secrets/{name}/factories', shape: SECRET },
  { method: 'POST', path: '/api/v1/secrets/{name}/grant', shape: SECRET },
  { method: 'POST', path: '/api/v1/secrets/{name}/revoke', shape: SECRET },
  { method: 'POST', path: '/api/v1/agent/runs', shape: RUN },
  { method: 'GET', path: '/api/v1/agent/runs', shape: { runs: [RUN], page_info: { has_next_page: 'boolean', next_cursor: 'string|null' } } },
  { method: 'GET', path: '/api/v1/agent/runs/{run_id}', shape: RUN },
  { method: 'POST', path: '/api/v1/agent/runs/{run_id}/cancel', shape: { run_id: 'string' } },
  { method: 'POST', path: '/api/v1/agent/runs/{run_id}/retry', shape: RUN },
  {
    method: 'GET', path: '/api/v1/agent/runs/{run_id}/transcript',
    shape: { finished: 'boolean', events: [{ seq: 'number', time: 'string', type: 'string', data: 'object' }], next_after: 'number', has_more: 'boolean' },
  },
];

const ROUTES = ANSWER_SHAPES.map((r) => ({ ...r, pattern: new RegExp(`^${r.path.replace(/\{[a-z_]+\}/g, '[^/]+')}$`) }));

/** The shape of the answer to `method path` (a path without its query), if the CLI reads that route. */
export function answerShape(method: string, path: string): Shape | undefined {
  return ROUTES.find((r) => r.method === method && r.pattern.test(path))?.shape;
}

/**
 * What in `value` does not fit `shape`, in a few words (`"notes" is missing`, `"runs[0].state" is
 * a number, not a string`); undefined when it fits. Only the first problem is said.
 */
export function shapeProblem(value: unknown, shape: Shape): string | undefined {
  return problemAt(value, shape, '');
}

function problemAt(value: unknown, shape: Shape, at: string): string | undefined {
  if (typeof shape === 'object' && NULL_OK in shape) return value === null ? undefined : problemAt(value, shape[NULL_OK], at);
  if (typeof shape === 'string') {
    const [type, nullOk] = shape.split('|') as [string, string | undefined];
    if (value === null && nullOk) return undefined;
    const fits = type === 'object' ? typeof value === 'object' && value !== null && !Array.isArray(value) : typeof value === type;
    return fits ? undefined : `"${at}" is ${describe(value)}, not ${type === 'object' ? 'an object' : `a ${type}`}${nullOk ? ' or null' : ''}`;
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return `"${at}" is ${describe(value)}, not a list`;
    for (let i = 0; i < value.length; i++) {
      const problem = problemAt(value[i], shape[0], `${at}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${at ? `"${at}"` : 'the answer'} is ${describe(value)}, not an object`;
  for (const [key, inner] of Object.entries(shape as Record<string, Shape>)) {
    const optional = key.endsWith('?');
    const name = optional ? key.slice(0, -1) : key;
    const field = (value as Record<string, unknown>)[name];
    const path = at ? `${at}.${name}` : name;
    if (field === undefined) {
      if (optional) continue;
      return `"${path}" is missing`;
    }
    const problem = problemAt(field, inner, path);
    if (problem) return problem;
  }
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
