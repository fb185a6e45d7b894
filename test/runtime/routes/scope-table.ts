import type { Scope } from '../../../runtime/store/keys.ts';

/**
 * Every authenticated route of the runtime and the scope it needs (docs/runtime.md, docs/api.md).
 * scopes.test.ts checks each row against a real server: no key → 401, a revoked key → 401, a key
 * without the scope → 403; and it fails when an /api/ route is missing from this table. Path
 * parameters may be any placeholder: authentication comes before any look-up. Owners of route
 * modules add their rows here.
 */
export interface RouteScope {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  scope: Scope;
  /** A JSON body to send (auth must fail before the body matters, so any body will do). */
  body?: unknown;
}

/** The /api/ routes that need no key: they describe the API and hold no data. */
export const PUBLIC_ROUTES: { method: 'GET'; path: string }[] = [
  // runtime/routes/openapi.ts
  { method: 'GET', path: '/api/v1/openapi.json' },
];

export const ROUTE_SCOPES: RouteScope[] = [
  // runtime/routes/keys.ts
  { method: 'POST', path: '/api/v1/keys', scope: 'admin', body: { name: 'x', kind: 'agent', scopes: ['runs'] } },
  { method: 'GET', path: '/api/v1/keys', scope: 'admin' },
  { method: 'POST', path: '/api/v1/keys/key_placeholder/revoke', scope: 'admin' },
  // runtime/routes/secrets.ts
  { method: 'POST', path: '/api/v1/secrets', scope: 'admin', body: { name: 'x', value: 'y' } },
  { method: 'GET', path: '/api/v1/secrets', scope: 'admin' },
  { method: 'GET', path: '/api/v1/secrets/placeholder', scope: 'admin' },
  { method: 'PUT', path: '/api/v1/secrets/placeholder', scope: 'admin', body: { value: 'y' } },
  { method: 'DELETE', path: '/api/v1/secrets/placeholder', scope: 'admin' },
  { method: 'PUT', path: '/api/v1/secrets/placeholder/factories', scope: 'admin', body: { factories: null } },
  { method: 'POST', path: '/api/v1/secrets/placeholder/grant', scope: 'admin', body: { factories: ['x'] } },
  { method: 'POST', path: '/api/v1/secrets/placeholder/revoke', scope: 'admin', body: { factories: ['x'] } },
  // runtime/routes/definitions.ts
  { method: 'POST', path: '/api/v1/factories/placeholder/plan', scope: 'manage', body: { snapshot: {} } },
  { method: 'POST', path: '/api/v1/factories/placeholder/apply', scope: 'manage', body: { snapshot: {} } },
  { method: 'GET', path: '/api/v1/webhooks', scope: 'manage' },
  { method: 'GET', path: '/api/v1/webhooks/wh_placeholder', scope: 'manage' },
  // runtime/routes/webhooks-manage.ts
  { method: 'POST', path: '/api/v1/factories/placeholder/webhooks', scope: 'manage', body: { name: 'x' } },
  { method: 'POST', path: '/api/v1/webhooks/wh_placeholder/enable', scope: 'manage' },
  { method: 'POST', path: '/api/v1/webhooks/wh_placeholder/disable', scope: 'manage' },
  { method: 'POST', path: '/api/v1/webhooks/wh_placeholder/rotate', scope: 'manage' },
  { method: 'POST', path: '/api/v1/webhooks/wh_placeholder/secret', scope: 'manage', body: { secret: 'x' } },
  { method: 'DELETE', path: '/api/v1/webhooks/wh_placeholder', scope: 'manage' },
  { method: 'GET', path: '/api/v1/webhooks/wh_placeholder/deliveries', scope: 'manage' },
  { method: 'GET', path: '/api/v1/webhooks/wh_placeholder/deliveries/placeholder', scope: 'manage' },
  { method: 'POST', path: '/api/v1/webhooks/wh_placeholder/deliveries/placeholder/replay', scope: 'manage' },
  // runtime/routes/runs.ts
  { method: 'POST', path: '/api/v1/agent/runs', scope: 'runs', body: { prompt: 'x', config: { environment_id: 'x' } } },
  { method: 'POST', path: '/api/v1/agent/run', scope: 'runs', body: { prompt: 'x', config: { environment_id: 'x' } } },
  { method: 'GET', path: '/api/v1/agent/runs', scope: 'runs' },
  { method: 'GET', path: '/api/v1/agent/runs/run_placeholder', scope: 'runs' },
  { method: 'POST', path: '/api/v1/agent/runs/run_placeholder/cancel', scope: 'runs' },
  { method: 'POST', path: '/api/v1/agent/runs/run_placeholder/retry', scope: 'runs' },
  { method: 'GET', path: '/api/v1/agent/runs/run_placeholder/transcript', scope: 'runs' },
  // runtime/routes/worker.ts
  { method: 'POST', path: '/api/v1/worker/claim', scope: 'worker', body: { worker: 'w', worker_id: 'placeholder' } },
  { method: 'POST', path: '/api/v1/worker/runs/run_placeholder/heartbeat', scope: 'worker', body: { worker_id: 'placeholder' } },
  { method: 'POST', path: '/api/v1/worker/runs/run_placeholder/events', scope: 'worker', body: { worker_id: 'placeholder', events: [] } },
  { method: 'POST', path: '/api/v1/worker/runs/run_placeholder/finish', scope: 'worker', body: { worker_id: 'placeholder', state: 'SUCCEEDED' } },
  // runtime/routes/automations.ts
  { method: 'GET', path: '/api/v1/automations', scope: 'manage' },
  { method: 'GET', path: '/api/v1/automations/placeholder/placeholder', scope: 'manage' },
  { method: 'POST', path: '/api/v1/automations/placeholder/placeholder/test', scope: 'manage', body: { delivery_id: 'x' } },
  // runtime/routes/schedules.ts
  { method: 'GET', path: '/api/v1/agent/schedules', scope: 'manage' },
  { method: 'GET', path: '/api/v1/agent/schedules/placeholder%2Fplaceholder%2F%230', scope: 'manage' },
  { method: 'POST', path: '/api/v1/agent/schedules/placeholder%2Fplaceholder%2F%230/pause', scope: 'manage' },
  { method: 'POST', path: '/api/v1/agent/schedules/placeholder%2Fplaceholder%2F%230/resume', scope: 'manage' },
];
