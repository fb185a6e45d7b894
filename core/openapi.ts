/**
 * The OpenAPI 3.1 document of the HTTP API (docs/api.md#openapi), composed from the JSON Schemas
 * under schemas/api/. Pure: the schemas in, a document out. The runtime serves it at
 * GET /api/v1/openapi.json; `npm run openapi` writes the copy kept at schemas/openapi.json, and a
 * test fails when that copy differs from what this module builds.
 *
 * The schemas are draft-07 (like every schema under schemas/, compiled by the one Ajv instance in
 * core/schemas.ts) but keep to the part of it that means the same in JSON Schema 2020-12, OpenAPI
 * 3.1's dialect: no `definitions`, no array-form `items`, no keyword beside a `$ref`. So they are
 * embedded as they are, with `$schema` and `$id` dropped and file `$ref`s pointed at components.
 */

import pkg from '../package.json' with { type: 'json' };
import { RESOURCE_NAME_PATTERN, RUN_ID_PATTERN, WEBHOOK_UID_PATTERN } from './ids.ts';
import applyResult from '../schemas/api/apply-result.schema.json' with { type: 'json' };
import automationTest from '../schemas/api/automation-test.schema.json' with { type: 'json' };
import deliveryList from '../schemas/api/delivery-list.schema.json' with { type: 'json' };
import delivery from '../schemas/api/delivery.schema.json' with { type: 'json' };
import factoriesChange from '../schemas/api/factories-change.schema.json' with { type: 'json' };
import keyCreate from '../schemas/api/key-create.schema.json' with { type: 'json' };
import keyCreated from '../schemas/api/key-created.schema.json' with { type: 'json' };
import keyList from '../schemas/api/key-list.schema.json' with { type: 'json' };
import key from '../schemas/api/key.schema.json' with { type: 'json' };
import planRequest from '../schemas/api/plan-request.schema.json' with { type: 'json' };
import planResult from '../schemas/api/plan-result.schema.json' with { type: 'json' };
import problem from '../schemas/api/problem.schema.json' with { type: 'json' };
import replayResult from '../schemas/api/replay-result.schema.json' with { type: 'json' };
import replay from '../schemas/api/replay.schema.json' with { type: 'json' };
import runCancel from '../schemas/api/run-cancel.schema.json' with { type: 'json' };
import runCreate from '../schemas/api/run-create.schema.json' with { type: 'json' };
import runList from '../schemas/api/run-list.schema.json' with { type: 'json' };
import run from '../schemas/api/run.schema.json' with { type: 'json' };
import secretCreate from '../schemas/api/secret-create.schema.json' with { type: 'json' };
import secretList from '../schemas/api/secret-list.schema.json' with { type: 'json' };
import secretUpdate from '../schemas/api/secret-update.schema.json' with { type: 'json' };
import secret from '../schemas/api/secret.schema.json' with { type: 'json' };
import transcriptPage from '../schemas/api/transcript-page.schema.json' with { type: 'json' };
import webhookChange from '../schemas/api/webhook-change.schema.json' with { type: 'json' };
import webhookCreate from '../schemas/api/webhook-create.schema.json' with { type: 'json' };
import webhookList from '../schemas/api/webhook-list.schema.json' with { type: 'json' };
import webhookSecret from '../schemas/api/webhook-secret.schema.json' with { type: 'json' };
import webhook from '../schemas/api/webhook.schema.json' with { type: 'json' };
import workerClaim from '../schemas/api/worker-claim.schema.json' with { type: 'json' };
import workerEvents from '../schemas/api/worker-events.schema.json' with { type: 'json' };
import workerFinish from '../schemas/api/worker-finish.schema.json' with { type: 'json' };
import workerHeartbeat from '../schemas/api/worker-heartbeat.schema.json' with { type: 'json' };
import workerJob from '../schemas/api/worker-job.schema.json' with { type: 'json' };
import workerLease from '../schemas/api/worker-lease.schema.json' with { type: 'json' };

/** Every API schema by file name (schemas/api/<name>.schema.json). */
export const API_SCHEMAS: Readonly<Record<string, object>> = {
  'apply-result': applyResult,
  'automation-test': automationTest,
  'delivery-list': deliveryList,
  delivery,
  'factories-change': factoriesChange,
  'key-create': keyCreate,
  'key-created': keyCreated,
  'key-list': keyList,
  key,
  'plan-request': planRequest,
  'plan-result': planResult,
  problem,
  'replay-result': replayResult,
  replay,
  'run-cancel': runCancel,
  'run-create': runCreate,
  'run-list': runList,
  run,
  'secret-create': secretCreate,
  'secret-list': secretList,
  'secret-update': secretUpdate,
  secret,
  'transcript-page': transcriptPage,
  'webhook-change': webhookChange,
  'webhook-create': webhookCreate,
  'webhook-list': webhookList,
  'webhook-secret': webhookSecret,
  webhook,
  'worker-claim': workerClaim,
  'worker-events': workerEvents,
  'worker-finish': workerFinish,
  'worker-heartbeat': workerHeartbeat,
  'worker-job': workerJob,
  'worker-lease': workerLease,
};
export type ApiSchemaName = keyof typeof API_SCHEMAS & string;

/** The component name of a schema file: run-create → RunCreate. */
export const componentName = (file: string): string => file.replace(/(^|-)([a-z])/g, (_, _d, c: string) => c.toUpperCase());

type Scope = 'runs' | 'manage' | 'worker' | 'admin';
interface Param {
  name: string;
  description: string;
  schema?: object;
  array?: boolean;
}
interface Operation {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  id: string;
  summary: string;
  tag: string;
  /** null: no key needed. */
  scope: Scope | null;
  /** Where docs/ explain it. */
  doc: string;
  body?: ApiSchemaName;
  /** The body may be left out (an empty request). */
  bodyOptional?: boolean;
  query?: Param[];
  ok: number;
  /** The success answer's schema; absent: described only (see `doc`), or no body for 204. */
  answer?: ApiSchemaName;
  /** A second success status with the same body (the idempotent repeat of a create, a replay that started nothing). */
  alsoOk?: { status: number; description: string };
  /** The Location header on the success answer. */
  location?: boolean;
  /** Takes an Idempotency-Key header (the run creates). */
  idempotent?: boolean;
  /** A 204 (no body) beside the success answer, and when. */
  noContent?: string;
}

const RUN_ID = { type: 'string', pattern: RUN_ID_PATTERN.source };
const UID = { type: 'string', pattern: WEBHOOK_UID_PATTERN.source };
const NAME = { type: 'string', pattern: RESOURCE_NAME_PATTERN.source };
const PATH_PARAMS: Record<string, { description: string; schema: object }> = {
  run_id: { description: 'The run (run_ + 26 characters).', schema: RUN_ID },
  uid: { description: 'The webhook UID (wh_ + 26 characters).', schema: UID },
  factory: { description: 'The factory name.', schema: NAME },
  name: { description: 'The name.', schema: { type: 'string' } },
  key_id: { description: 'The key id (key_ + 26 characters).', schema: { type: 'string' } },
  delivery_id: { description: 'The delivery\'s own identity (docs/ingress.md#identity).', schema: { type: 'string' } },
  schedule_id: { description: '<factory>/<automation>/<name or #index>, URL-encoded.', schema: { type: 'string' } },
};
const TIMESTAMP = { type: 'string', description: 'RFC 3339, e.g. 2026-01-31T12:00:00Z' };
const str = (description: string): Param => ({ name: '', description, schema: { type: 'string' } });
const q = (name: string, p: Param): Param => ({ ...p, name });

/** The run list's parameters (docs/api.md#list-runs); a test compares them with what the route reads. */
export const RUN_LIST_QUERY: Param[] = [
  q('limit', { name: '', description: '1 to 100, default 20.', schema: { type: 'integer', minimum: 1, maximum: 100 } }),
  q('cursor', str('The next_cursor of the previous page.')),
  q('state', { name: '', description: 'Runs in any of these states; repeatable or comma-separated. Oz\'s PENDING, CLAIMED and BLOCKED match no run here.', array: true, schema: { type: 'string' } }),
  q('source', str('API, WEBHOOK or SCHEDULE (Oz\'s SCHEDULED_AGENT is SCHEDULE; its other sources give an empty page).')),
  q('environment_id', str('Exact match.')),
  q('factory', str('Exact match.')),
  q('automation', str('Exact match.')),
  q('created_after', { name: '', description: 'Created after this time.', schema: TIMESTAMP }),
  q('created_before', { name: '', description: 'Created before this time.', schema: TIMESTAMP }),
  q('updated_after', { name: '', description: 'Updated after this time.', schema: TIMESTAMP }),
  q('creator', str('The key\'s or automation\'s name.')),
  q('q', str('A substring, in any case, of the title, the prompt or the skill.')),
  q('name', str('Oz\'s recorded config.name.')),
  q('model_id', str('Oz\'s recorded config.model_id.')),
  q('skill', str('Oz\'s recorded skill or config.skill_spec.')),
  q('skill_spec', str('The same as skill.')),
  q('schedule_id', str('Runs started by this schedule (its id, <factory>/<automation>/<name or #index>), retries of them included.')),
  q('artifact_type', { name: '', description: 'Oz\'s; no run here has artifacts, so the page is empty.', schema: { enum: ['PLAN', 'PULL_REQUEST', 'SCREENSHOT'] } }),
  q('sort_by', { name: '', description: 'Default created_at.', schema: { enum: ['created_at', 'updated_at'] } }),
  q('sort_order', { name: '', description: 'Default desc.', schema: { enum: ['asc', 'desc'] } }),
];
const PAGE_QUERY: Param[] = [
  q('limit', { name: '', description: '1 to 100, default 20.', schema: { type: 'integer', minimum: 1, maximum: 100 } }),
  q('cursor', str('The next_cursor of the previous page.')),
];

const RUNS = '/api/v1/agent/runs';
/** Every operation of the API. A test checks this list against the router's routes. */
export const OPERATIONS: Operation[] = [
  // Runs (runtime/routes/runs.ts, replay-retry.ts)
  { method: 'post', path: RUNS, id: 'createRun', summary: 'Create a run', tag: 'runs', scope: 'runs', doc: 'docs/api.md#create-a-run', body: 'run-create', ok: 201, alsoOk: { status: 200, description: 'The run created before with the same Idempotency-Key and body.' }, answer: 'run', location: true, idempotent: true },
  { method: 'post', path: '/api/v1/agent/run', id: 'createRunOz', summary: 'Create a run (the path of Oz\'s SDK)', tag: 'runs', scope: 'runs', doc: 'docs/api.md#oz-compatibility', body: 'run-create', ok: 201, alsoOk: { status: 200, description: 'The run created before with the same Idempotency-Key and body.' }, answer: 'run', location: true, idempotent: true },
  { method: 'get', path: RUNS, id: 'listRuns', summary: 'List runs, newest first', tag: 'runs', scope: 'runs', doc: 'docs/api.md#list-runs', query: RUN_LIST_QUERY, ok: 200, answer: 'run-list' },
  { method: 'get', path: `${RUNS}/{run_id}`, id: 'getRun', summary: 'Read a run', tag: 'runs', scope: 'runs', doc: 'docs/api.md#read-a-run', ok: 200, answer: 'run' },
  { method: 'post', path: `${RUNS}/{run_id}/cancel`, id: 'cancelRun', summary: 'Cancel a run', tag: 'runs', scope: 'runs', doc: 'docs/api.md#cancel-a-run', ok: 200, answer: 'run-cancel' },
  { method: 'post', path: `${RUNS}/{run_id}/retry`, id: 'retryRun', summary: 'Retry a FAILED or ERROR run', tag: 'runs', scope: 'runs', doc: 'docs/api.md#retry', ok: 201, answer: 'run', location: true },
  {
    method: 'get', path: `${RUNS}/{run_id}/transcript`, id: 'getTranscript', summary: 'A page of the run\'s transcript', tag: 'runs', scope: 'runs', doc: 'docs/api.md#follow-a-transcript',
    query: [q('after', { name: '', description: 'Events after this seq; default 0.', schema: { type: 'integer', minimum: 0 } })], ok: 200, answer: 'transcript-page',
  },
  // Plan and apply (runtime/routes/definitions.ts)
  { method: 'post', path: '/api/v1/factories/{factory}/plan', id: 'planFactory', summary: 'Plan a snapshot against the runtime', tag: 'definitions', scope: 'manage', doc: 'docs/plan-apply.md', body: 'plan-request', ok: 200, answer: 'plan-result' },
  { method: 'post', path: '/api/v1/factories/{factory}/apply', id: 'applyFactory', summary: 'Apply a snapshot', tag: 'definitions', scope: 'manage', doc: 'docs/plan-apply.md', body: 'plan-request', ok: 200, answer: 'apply-result' },
  // Webhooks and deliveries (runtime/routes/definitions.ts, webhooks-manage.ts, replay-retry.ts)
  { method: 'get', path: '/api/v1/webhooks', id: 'listWebhooks', summary: 'List webhooks', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md', ok: 200, answer: 'webhook-list' },
  { method: 'get', path: '/api/v1/webhooks/{uid}', id: 'getWebhook', summary: 'Read a webhook', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md', ok: 200, answer: 'webhook' },
  { method: 'delete', path: '/api/v1/webhooks/{uid}', id: 'deleteWebhook', summary: 'Delete an API-managed webhook', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', ok: 200, answer: 'webhook-change' },
  { method: 'post', path: '/api/v1/factories/{factory}/webhooks', id: 'createWebhook', summary: 'Create a webhook', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', body: 'webhook-create', ok: 201, answer: 'webhook-change', location: true },
  { method: 'post', path: '/api/v1/webhooks/{uid}/enable', id: 'enableWebhook', summary: 'Enable a webhook', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', ok: 200, answer: 'webhook-change' },
  { method: 'post', path: '/api/v1/webhooks/{uid}/disable', id: 'disableWebhook', summary: 'Disable a webhook', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', ok: 200, answer: 'webhook-change' },
  { method: 'post', path: '/api/v1/webhooks/{uid}/rotate', id: 'rotateWebhook', summary: 'Rotate a webhook\'s secret', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', body: 'webhook-secret', bodyOptional: true, ok: 200, answer: 'webhook-change' },
  { method: 'post', path: '/api/v1/webhooks/{uid}/secret', id: 'setWebhookSecret', summary: 'Set a pending webhook\'s secret', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#webhook-lifecycle', body: 'webhook-secret', ok: 200, answer: 'webhook-change' },
  { method: 'get', path: '/api/v1/webhooks/{uid}/deliveries', id: 'listDeliveries', summary: 'The delivery log, newest first', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#delivery-log', query: PAGE_QUERY, ok: 200, answer: 'delivery-list' },
  { method: 'get', path: '/api/v1/webhooks/{uid}/deliveries/{delivery_id}', id: 'getDelivery', summary: 'One delivery, with its payload', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#delivery-log', ok: 200, answer: 'delivery' },
  { method: 'post', path: '/api/v1/webhooks/{uid}/deliveries/{delivery_id}/replay', id: 'replayDelivery', summary: 'Run a stored delivery again', tag: 'webhooks', scope: 'manage', doc: 'docs/ingress.md#replay', body: 'replay', bodyOptional: true, ok: 201, alsoOk: { status: 200, description: 'No automation matches now: no run was started (detail says so).' }, answer: 'replay-result' },
  // Automations (runtime/routes/automations.ts)
  { method: 'get', path: '/api/v1/automations', id: 'listAutomations', summary: 'List automations', tag: 'automations', scope: 'manage', doc: 'docs/automations.md', ok: 200 },
  { method: 'get', path: '/api/v1/automations/{factory}/{name}', id: 'getAutomation', summary: 'Read an automation', tag: 'automations', scope: 'manage', doc: 'docs/automations.md', ok: 200 },
  { method: 'post', path: '/api/v1/automations/{factory}/{name}/test', id: 'testAutomation', summary: 'Test an automation\'s filter against a stored delivery', tag: 'automations', scope: 'manage', doc: 'docs/automations.md', body: 'automation-test', ok: 200 },
  // Schedules (runtime/routes/schedules.ts)
  { method: 'get', path: '/api/v1/agent/schedules', id: 'listSchedules', summary: 'The automations\' schedule triggers, in Oz\'s shape', tag: 'automations', scope: 'manage', doc: 'docs/api.md#schedules', ok: 200 },
  { method: 'get', path: '/api/v1/agent/schedules/{schedule_id}', id: 'getSchedule', summary: 'One schedule', tag: 'automations', scope: 'manage', doc: 'docs/api.md#schedules', ok: 200 },
  { method: 'post', path: '/api/v1/agent/schedules/{schedule_id}/pause', id: 'pauseSchedule', summary: 'Pause a schedule: it does not fire until resumed', tag: 'automations', scope: 'manage', doc: 'docs/api.md#pause-and-resume', ok: 200 },
  { method: 'post', path: '/api/v1/agent/schedules/{schedule_id}/resume', id: 'resumeSchedule', summary: 'Resume a schedule, armed again from now', tag: 'automations', scope: 'manage', doc: 'docs/api.md#pause-and-resume', ok: 200 },
  // Keys (runtime/routes/keys.ts)
  { method: 'post', path: '/api/v1/keys', id: 'createKey', summary: 'Create an API key', tag: 'keys', scope: 'admin', doc: 'docs/runtime.md#api-keys-and-scopes', body: 'key-create', ok: 201, answer: 'key-created', location: true },
  { method: 'get', path: '/api/v1/keys', id: 'listKeys', summary: 'List API keys', tag: 'keys', scope: 'admin', doc: 'docs/runtime.md#api-keys-and-scopes', ok: 200, answer: 'key-list' },
  { method: 'post', path: '/api/v1/keys/{key_id}/revoke', id: 'revokeKey', summary: 'Revoke an API key', tag: 'keys', scope: 'admin', doc: 'docs/runtime.md#api-keys-and-scopes', ok: 200, answer: 'key' },
  // Team secrets (runtime/routes/secrets.ts)
  { method: 'post', path: '/api/v1/secrets', id: 'createSecret', summary: 'Create a team secret', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#team-secrets', body: 'secret-create', ok: 201, answer: 'secret', location: true },
  { method: 'get', path: '/api/v1/secrets', id: 'listSecrets', summary: 'List team secrets (metadata only)', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#team-secrets', ok: 200, answer: 'secret-list' },
  { method: 'get', path: '/api/v1/secrets/{name}', id: 'getSecret', summary: 'Read a team secret\'s metadata', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#team-secrets', ok: 200, answer: 'secret' },
  { method: 'put', path: '/api/v1/secrets/{name}', id: 'updateSecret', summary: 'Set a new value', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#graceful-rotation', body: 'secret-update', ok: 200, answer: 'secret' },
  { method: 'delete', path: '/api/v1/secrets/{name}', id: 'deleteSecret', summary: 'Delete a team secret', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#team-secrets', ok: 204 },
  { method: 'put', path: '/api/v1/secrets/{name}/factories', id: 'setSecretFactories', summary: 'Replace the factories that may use a secret', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#which-factories-may-use-a-secret', body: 'factories-change', ok: 200, answer: 'secret' },
  { method: 'post', path: '/api/v1/secrets/{name}/grant', id: 'grantSecret', summary: 'Let more factories use a secret', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#which-factories-may-use-a-secret', body: 'factories-change', ok: 200, answer: 'secret' },
  { method: 'post', path: '/api/v1/secrets/{name}/revoke', id: 'revokeSecret', summary: 'Take factories off a secret', tag: 'secrets', scope: 'admin', doc: 'docs/runtime.md#which-factories-may-use-a-secret', body: 'factories-change', ok: 200, answer: 'secret' },
  // Workers (runtime/routes/worker.ts)
  { method: 'post', path: '/api/v1/worker/claim', id: 'claimRun', summary: 'Claim the oldest QUEUED run with a lease', tag: 'workers', scope: 'worker', doc: 'docs/runs.md#workers', body: 'worker-claim', ok: 200, answer: 'worker-job', noContent: 'No run is QUEUED (after waiting wait_seconds).' },
  { method: 'post', path: '/api/v1/worker/runs/{run_id}/heartbeat', id: 'heartbeatRun', summary: 'Renew the lease of a claimed run', tag: 'workers', scope: 'worker', doc: 'docs/runs.md#workers', body: 'worker-lease', ok: 200, answer: 'worker-heartbeat' },
  { method: 'post', path: '/api/v1/worker/runs/{run_id}/events', id: 'appendRunEvents', summary: 'Append transcript events of a claimed run', tag: 'workers', scope: 'worker', doc: 'docs/runs.md#workers', body: 'worker-events', ok: 200, answer: 'worker-heartbeat' },
  { method: 'post', path: '/api/v1/worker/runs/{run_id}/finish', id: 'finishRun', summary: 'Record the outcome of a claimed run', tag: 'workers', scope: 'worker', doc: 'docs/runs.md#workers', body: 'worker-finish', ok: 200, answer: 'run' },
  // No key needed (runtime/routes/health.ts, openapi.ts)
  { method: 'get', path: '/api/v1/openapi.json', id: 'getOpenApi', summary: 'This document', tag: 'meta', scope: null, doc: 'docs/api.md#openapi', ok: 200 },
  { method: 'get', path: '/healthz', id: 'health', summary: 'The process is up', tag: 'meta', scope: null, doc: 'docs/runtime.md#health', ok: 200 },
  { method: 'get', path: '/readyz', id: 'ready', summary: 'The database answers (503 otherwise)', tag: 'meta', scope: null, doc: 'docs/runtime.md#health', ok: 200 },
];

/** A schema as a component: `$schema`/`$id` dropped, file refs pointed at components (recursively). */
function toComponent(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponent);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$schema' || k === '$id') continue;
    if (k === '$ref' && typeof v === 'string') {
      const m = /^([a-z-]+)\.schema\.json$/.exec(v);
      if (!m || !(m[1] in API_SCHEMAS)) throw new Error(`schemas/api: $ref "${v}" names no schema of schemas/api/`);
      out[k] = `#/components/schemas/${componentName(m[1])}`;
    } else out[k] = toComponent(v);
  }
  return out;
}

const ref = (name: ApiSchemaName) => ({ $ref: `#/components/schemas/${componentName(name)}` });

function operation(op: Operation): Record<string, unknown> {
  const params = [...op.path.matchAll(/\{([a-z_]+)\}/g)].map(([, name]) => ({ name, in: 'path', required: true, ...PATH_PARAMS[name] }));
  const query = (op.query ?? []).map((p) => ({
    name: p.name,
    in: 'query',
    required: false,
    description: p.description,
    schema: p.array ? { type: 'array', items: p.schema } : p.schema,
    ...(p.array ? { style: 'form', explode: true } : {}),
  }));
  const success: Record<string, unknown> = {
    description: op.summary,
    ...(op.location ? { headers: { Location: { description: 'The path of what was created.', schema: { type: 'string' } } } } : {}),
    ...(op.ok === 204 ? {} : { content: { 'application/json': { schema: op.answer ? ref(op.answer) : { type: 'object', description: `See ${op.doc}.` } } } }),
  };
  const responses: Record<string, unknown> = { [String(op.ok)]: success };
  if (op.alsoOk) responses[String(op.alsoOk.status)] = { ...success, description: op.alsoOk.description };
  if (op.noContent) responses['204'] = { description: op.noContent };
  if (op.scope) {
    responses['401'] = { $ref: '#/components/responses/Unauthenticated' };
    responses['403'] = { $ref: '#/components/responses/Forbidden' };
  }
  responses.default = { $ref: '#/components/responses/Problem' };
  const headers = op.idempotent
    ? [{ name: 'Idempotency-Key', in: 'header', required: false, description: '1 to 255 visible ASCII characters: a repeat within 24 hours returns the first run (200).', schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' } }]
    : [];
  const parameters = [...params, ...query, ...headers];
  return {
    operationId: op.id,
    summary: op.summary,
    description: `${op.scope ? `Scope \`${op.scope}\`` : 'No key needed'}. See ${op.doc}.`,
    tags: [op.tag],
    ...(op.scope ? { 'x-factory-scope': op.scope } : { security: [] }),
    ...(parameters.length ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: !op.bodyOptional, content: { 'application/json': { schema: ref(op.body) } } } }
      : {}),
    responses,
  };
}

/** The document; with `baseUrl`, `servers` names the runtime that serves it. */
export function buildOpenApi(options: { baseUrl?: string } = {}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method] = operation(op);
  const problemResponse = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('problem') } } });
  return {
    openapi: '3.1.0',
    info: {
      title: 'factory',
      version: pkg.version,
      description: 'The run API (create, read, list, cancel and follow agent runs) and the management API of a factory runtime. Every /api/ route but this document needs `Authorization: Bearer fk_...` with the scope each operation names (x-factory-scope). Errors are problem+json with a stable code (docs/errors.md).',
      license: { name: pkg.license, identifier: pkg.license },
    },
    ...(options.baseUrl ? { servers: [{ url: options.baseUrl }] } : {}),
    security: [{ bearer: [] }],
    tags: ['runs', 'definitions', 'webhooks', 'automations', 'keys', 'secrets', 'workers', 'meta'].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key, fk_... (docs/runtime.md#api-keys-and-scopes).' } },
      responses: {
        Problem: problemResponse('An error; code says which (docs/errors.md).'),
        Unauthenticated: problemResponse('No key, a malformed header, an unknown or a revoked key (authentication_required).'),
        Forbidden: problemResponse('The key lacks the scope (not_authorized).'),
      },
      schemas: Object.fromEntries(Object.entries(API_SCHEMAS).sort(([a], [b]) => a.localeCompare(b)).map(([name, schema]) => [componentName(name), toComponent(schema)])),
    },
  };
}

/** The document as committed at schemas/openapi.json: no servers, two-space JSON, a final newline. */
export function openApiText(): string {
  return JSON.stringify(buildOpenApi(), null, 2) + '\n';
}
