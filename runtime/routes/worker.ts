import type { Context } from 'koa';
import { conflict, invalidRequest, type FieldError } from '../../core/errors.ts';
import { RUN_ERROR_CODES } from '../../core/run-state.ts';
import { assertStillValid, principalOf, requireScope, factoriesOf } from '../http/auth.ts';
import { readJsonBody } from '../http/body.ts';
import { jobTimeLimitMs } from '../executor/job.ts';
import { prepareJob, RunSetupError, type PreparedJob } from '../executor/prepare.ts';
import { LEASE_LOST, type LeaseHolder } from '../store/leases.ts';
import type { FinalState, RunRecord } from '../store/runs.ts';
import type { RouteModule } from './index.ts';
import { findRun, runView } from './runs.ts';
import { charCount, PLAIN_NAME } from '../../core/text.ts';

export const WORKER_PATH = '/api/v1/worker';
/** The longest a claim waits for a run (docs/runs.md#workers). */
export const MAX_CLAIM_WAIT_SECONDS = 20;
/** How often a waiting claim looks for a run queued by something that did not wake it. */
const CLAIM_POLL_MS = 500;
/** Events per batch. */
export const MAX_EVENT_BATCH = 500;

/** The job as the worker API sends it: attachments in base64. */
export type WireJob = Omit<PreparedJob, 'attachments'> & { attachments: { name: string; data: string }[] };

/** A claim's answer (200). */
export interface WorkerClaim {
  run: RunRecord & { session_link: string | null };
  job: WireJob;
  lease_seconds: number;
}

const WORKER_ID = /^[A-Za-z0-9_-]{8,64}$/;
const EVENT_TYPES = ['command', 'output', 'message', 'file_change'];
const FINAL: FinalState[] = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];

/** The body as an object with only `allowed` fields, else a 400 naming the others. */
function objectBody(body: unknown, allowed: string[]): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('The body must be a JSON object.');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !allowed.includes(k));
  if (unknown.length) throw invalidRequest(`The body has unknown fields: ${unknown.join(', ')}.`, unknown.map((k) => ({ pointer: `/${k}`, message: 'unknown field' })));
  return b;
}

function refuse(errors: FieldError[]): void {
  if (errors.length) throw invalidRequest(`The request is not valid: ${errors[0].pointer}: ${errors[0].message}.`, errors);
}

/** What a claim asks for (worker-claim.schema.json). */
export interface ClaimInput {
  worker: string;
  workerId: string;
  capacity: number;
  waitSeconds: number;
}

const workerIdError = (b: Record<string, unknown>, errors: FieldError[]) => {
  if (typeof b.worker_id !== 'string' || !WORKER_ID.test(b.worker_id)) {
    errors.push({ pointer: '/worker_id', message: 'worker_id must be 8 to 64 letters, digits, _ or -' });
  }
};

/** The body of a claim, checked (400 invalid_request otherwise). */
export function parseClaim(body: unknown): ClaimInput {
  const b = objectBody(body, ['worker', 'worker_id', 'capacity', 'wait_seconds']);
  const errors: FieldError[] = [];
  if (typeof b.worker !== 'string' || !PLAIN_NAME.test(b.worker)) errors.push({ pointer: '/worker', message: 'worker must be a name of 1 to 128 characters without control characters' });
  workerIdError(b, errors);
  const intIn = (v: unknown, max: number) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= max;
  if (b.capacity !== undefined && !intIn(b.capacity, 1000)) errors.push({ pointer: '/capacity', message: 'capacity must be an integer from 0 to 1000' });
  if (b.wait_seconds !== undefined && !intIn(b.wait_seconds, MAX_CLAIM_WAIT_SECONDS)) {
    errors.push({ pointer: '/wait_seconds', message: `wait_seconds must be an integer from 0 to ${MAX_CLAIM_WAIT_SECONDS}` });
  }
  refuse(errors);
  return { worker: b.worker as string, workerId: b.worker_id as string, capacity: (b.capacity as number | undefined) ?? 1, waitSeconds: (b.wait_seconds as number | undefined) ?? 0 };
}

/** The body of a heartbeat (worker-lease.schema.json). */
export function parseLease(body: unknown): { workerId: string } {
  const b = objectBody(body, ['worker_id']);
  const errors: FieldError[] = [];
  workerIdError(b, errors);
  refuse(errors);
  return { workerId: b.worker_id as string };
}

/** The body of an events batch (worker-events.schema.json). */
export function parseEvents(body: unknown): { workerId: string; events: { type: string; data: Record<string, unknown> }[]; firstIndex: number | undefined } {
  const b = objectBody(body, ['worker_id', 'events', 'first_index']);
  const errors: FieldError[] = [];
  workerIdError(b, errors);
  if (b.first_index !== undefined && !(Number.isSafeInteger(b.first_index) && (b.first_index as number) >= 0)) {
    errors.push({ pointer: '/first_index', message: 'first_index must be a whole number of at least 0' });
  }
  const events = b.events;
  if (!Array.isArray(events) || events.length > MAX_EVENT_BATCH) {
    errors.push({ pointer: '/events', message: `events must be a list of at most ${MAX_EVENT_BATCH} events` });
  } else {
    events.forEach((e: unknown, i) => {
      const ok = e && typeof e === 'object' && !Array.isArray(e) && Object.keys(e).every((k) => k === 'type' || k === 'data');
      const ev = (ok ? e : {}) as { type?: unknown; data?: unknown };
      // `state` events are the store's own (docs/runs.md): a worker reports the outcome through finish.
      if (!ok || typeof ev.type !== 'string' || !EVENT_TYPES.includes(ev.type) || !ev.data || typeof ev.data !== 'object' || Array.isArray(ev.data)) {
        errors.push({ pointer: `/events/${i}`, message: `an event is {type, data} with type one of ${EVENT_TYPES.join(', ')} and data an object` });
      }
    });
  }
  refuse(errors);
  return { workerId: b.worker_id as string, events: events as { type: string; data: Record<string, unknown> }[], firstIndex: b.first_index as number | undefined };
}

/** The body of a finish (worker-finish.schema.json). */
export function parseFinish(body: unknown): { workerId: string; state: FinalState; statusMessage: string | undefined; errorCode: string | undefined } {
  const b = objectBody(body, ['worker_id', 'state', 'status_message', 'error_code']);
  const errors: FieldError[] = [];
  workerIdError(b, errors);
  if (typeof b.state !== 'string' || !(FINAL as string[]).includes(b.state)) errors.push({ pointer: '/state', message: `state must be one of ${FINAL.join(', ')}` });
  if (b.status_message !== undefined && b.status_message !== null && (typeof b.status_message !== 'string' || charCount(b.status_message) > 4096)) {
    errors.push({ pointer: '/status_message', message: 'status_message must be a string of at most 4096 characters, or null' });
  }
  if (b.error_code !== undefined && b.error_code !== null && !(RUN_ERROR_CODES as readonly unknown[]).includes(b.error_code)) {
    errors.push({ pointer: '/error_code', message: `error_code must be one of ${RUN_ERROR_CODES.join(', ')}, or null` });
  }
  refuse(errors);
  return {
    workerId: b.worker_id as string,
    state: b.state as FinalState,
    statusMessage: (b.status_message as string | null | undefined) ?? undefined,
    errorCode: (b.error_code as string | null | undefined) ?? undefined,
  };
}

/**
 * The lease holder of the calling worker: its key plus the id it chose at start, so another key
 * can never act on its leases (docs/runs.md#workers).
 */
function holderOf(ctx: Context, workerId: string, worker?: string): LeaseHolder {
  const p = principalOf(ctx);
  return { id: `${p.keyId}.${workerId}`, name: worker === undefined ? p.name : `${p.name}/${worker}` };
}

const lost = (runId: string) =>
  conflict(`This worker no longer holds the lease of run "${runId}": its lease expired or the run ended; stop executing it.`);

/**
 * The worker API (docs/runs.md#workers, docs/api.md#workers), scope `worker`: remote executors
 * claim QUEUED runs with a lease, report their transcript and outcome, and learn of cancels.
 */
export const workerRoutes: RouteModule = (router, deps) => {
  const { store, config } = deps;
  const worker = requireScope('worker');
  const leaseMs = config.leaseSeconds * 1000;
  const read = (ctx: Context) => readJsonBody(ctx, { limit: config.limits.apiBodyBytes, keepNul: true });

  /** Claims one run and prepares its job; a run whose job cannot be made ends FAILED, and the next is tried. */
  const claimOne = (holder: LeaseHolder, factories: readonly string[] | null): WorkerClaim | undefined => {
    for (;;) {
      // A key limited to some factories claims only their runs (docs/runtime.md#factory-limited-keys).
      const run = store.leases.claim(holder, leaseMs, factories);
      if (!run) return undefined;
      let job: PreparedJob;
      try {
        job = prepareJob(deps, run);
      } catch (err) {
        const setup = err instanceof RunSetupError;
        if (!setup) deps.log.error({ err, runId: run.run_id }, 'could not prepare a claimed run');
        store.leases.finish(run.run_id, holder, setup ? 'FAILED' : 'ERROR', setup
          ? { statusMessage: (err as Error).message, errorCode: 'environment_invalid', retryable: false }
          : { statusMessage: 'the runtime could not prepare the run', errorCode: 'platform_error', retryable: true });
        continue;
      }
      // The runtime holds the worker to the job's own time limits, with a lease's worth of slack
      // for its last reports (docs/runs.md#workers).
      store.leases.setDeadline(run.run_id, holder, jobTimeLimitMs(job) + leaseMs);
      deps.log.info({ runId: run.run_id, worker: holder.name }, 'run claimed by a worker');
      return {
        run: runView(store.runs.get(run.run_id) ?? run, config.baseUrl),
        job: { ...job, attachments: job.attachments.map((a) => ({ name: a.name, data: a.bytes.toString('base64') })) },
        lease_seconds: config.leaseSeconds,
      };
    }
  };

  router.post(`${WORKER_PATH}/claim`, worker, async (ctx) => {
    const input = parseClaim(await read(ctx));
    const holder = holderOf(ctx, input.workerId, input.worker);
    const capacity = input.capacity;
    const until = Date.now() + input.waitSeconds * 1000;
    // The wait ends when the client goes away, and nothing is claimed for it then: a run claimed
    // for a client that is gone would only end worker_lost (docs/runs.md#workers).
    const gone = new AbortController();
    ctx.res.once('close', () => gone.abort());
    const factories = factoriesOf(principalOf(ctx));
    let claimed = capacity > 0 ? claimOne(holder, factories) : undefined;
    while (!claimed && capacity > 0 && Date.now() < until) {
      const waitMore = await (deps.services.leases?.wait(Math.min(CLAIM_POLL_MS, until - Date.now()), gone.signal) ?? Promise.resolve(false));
      if (!waitMore || gone.signal.aborted) break;
      // The key was checked when the request came; one revoked while it waited gets nothing more.
      assertStillValid(principalOf(ctx), store);
      claimed = claimOne(holder, factories);
    }
    if (!claimed) {
      ctx.status = 204;
      return;
    }
    ctx.body = claimed;
  });

  router.post(`${WORKER_PATH}/runs/:id/heartbeat`, worker, async (ctx) => {
    const input = parseLease(await read(ctx));
    const run = findRun(deps, String(ctx.params.id));
    const held = store.leases.renew(run.run_id, holderOf(ctx, input.workerId), leaseMs);
    if (held === LEASE_LOST) throw lost(run.run_id);
    ctx.body = { cancel: held.cancel };
  });

  router.post(`${WORKER_PATH}/runs/:id/events`, worker, async (ctx) => {
    const input = parseEvents(await read(ctx));
    const run = findRun(deps, String(ctx.params.id));
    const held = store.leases.appendEvents(run.run_id, holderOf(ctx, input.workerId), leaseMs, input.events, input.firstIndex);
    if (held === LEASE_LOST) throw lost(run.run_id);
    ctx.body = { cancel: held.cancel };
  });

  router.post(`${WORKER_PATH}/runs/:id/finish`, worker, async (ctx) => {
    const input = parseFinish(await read(ctx));
    const run = findRun(deps, String(ctx.params.id));
    const holder = holderOf(ctx, input.workerId);
    const ended = store.leases.finish(run.run_id, holder, input.state, {
      statusMessage: input.statusMessage,
      errorCode: input.errorCode,
      // Only an ERROR is the platform's failure: a retry may succeed (docs/api.md#retry).
      retryable: input.state === 'ERROR',
    });
    if (ended === LEASE_LOST) throw lost(run.run_id);
    deps.log.info({ runId: run.run_id, state: input.state, worker: holder.name }, 'run finished by a worker');
    ctx.body = runView(ended, config.baseUrl);
  });
};
