import type { Context } from 'koa';
import { conflict, invalidRequest, type FieldError } from '../../core/errors.ts';
import { RUN_ERROR_CODES } from '../../core/run-state.ts';
import { principalOf, requireScope } from '../http/auth.ts';
import { readJsonBody } from '../http/body.ts';
import { prepareJob, RunSetupError, type PreparedJob } from '../executor/prepare.ts';
import { LEASE_LOST, type LeaseHolder } from '../store/leases.ts';
import type { FinalState, RunRecord } from '../store/runs.ts';
import type { RouteModule } from './index.ts';
import { findRun, runView } from './runs.ts';

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
const WORKER_NAME = /^[^\x00-\x1f\x7f]{1,128}$/;
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

/**
 * The lease holder of the calling worker: its key plus the id it chose at start, so another key
 * can never act on its leases (docs/runs.md#workers).
 */
function holderOf(ctx: Context, b: Record<string, unknown>, errors: FieldError[]): LeaseHolder {
  if (typeof b.worker_id !== 'string' || !WORKER_ID.test(b.worker_id)) {
    errors.push({ pointer: '/worker_id', message: 'worker_id must be 8 to 64 letters, digits, _ or -' });
  }
  const p = principalOf(ctx);
  const name = typeof b.worker === 'string' ? `${p.name}/${b.worker}` : p.name;
  return { id: `${p.keyId}.${String(b.worker_id)}`, name };
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
  const read = (ctx: Context) => readJsonBody(ctx, { limit: config.limits.apiBodyBytes });

  /** Claims one run and prepares its job; a run whose job cannot be made ends FAILED, and the next is tried. */
  const claimOne = (holder: LeaseHolder): WorkerClaim | undefined => {
    for (;;) {
      const run = store.leases.claim(holder, leaseMs);
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
      deps.log.info({ runId: run.run_id, worker: holder.name }, 'run claimed by a worker');
      return {
        run: runView(store.runs.get(run.run_id) ?? run, config.baseUrl),
        job: { ...job, attachments: job.attachments.map((a) => ({ name: a.name, data: a.bytes.toString('base64') })) },
        lease_seconds: config.leaseSeconds,
      };
    }
  };

  router.post(`${WORKER_PATH}/claim`, worker, async (ctx) => {
    const b = objectBody(await read(ctx), ['worker', 'worker_id', 'capacity', 'wait_seconds']);
    const errors: FieldError[] = [];
    if (typeof b.worker !== 'string' || !WORKER_NAME.test(b.worker)) errors.push({ pointer: '/worker', message: 'worker must be a name of 1 to 128 characters without control characters' });
    const holder = holderOf(ctx, b, errors);
    if (b.capacity !== undefined && !(Number.isInteger(b.capacity) && (b.capacity as number) >= 0 && (b.capacity as number) <= 1000)) {
      errors.push({ pointer: '/capacity', message: 'capacity must be an integer from 0 to 1000' });
    }
    if (b.wait_seconds !== undefined && !(Number.isInteger(b.wait_seconds) && (b.wait_seconds as number) >= 0 && (b.wait_seconds as number) <= MAX_CLAIM_WAIT_SECONDS)) {
      errors.push({ pointer: '/wait_seconds', message: `wait_seconds must be an integer from 0 to ${MAX_CLAIM_WAIT_SECONDS}` });
    }
    refuse(errors);
    const capacity = (b.capacity as number | undefined) ?? 1;
    const until = Date.now() + ((b.wait_seconds as number | undefined) ?? 0) * 1000;
    // The wait ends when the client goes away, and nothing is claimed for it then: a run claimed
    // for a client that is gone would only end worker_lost (docs/runs.md#workers).
    const gone = new AbortController();
    ctx.res.once('close', () => gone.abort());
    let claimed = capacity > 0 ? claimOne(holder) : undefined;
    while (!claimed && capacity > 0 && Date.now() < until) {
      const waitMore = await (deps.services.leases?.wait(Math.min(CLAIM_POLL_MS, until - Date.now()), gone.signal) ?? Promise.resolve(false));
      if (!waitMore || gone.signal.aborted) break;
      claimed = claimOne(holder);
    }
    if (!claimed) {
      ctx.status = 204;
      return;
    }
    ctx.body = claimed;
  });

  /** The run and the holder of a heartbeat, events or finish body. */
  const leaseRequest = async (ctx: Context, fields: string[]) => {
    const b = objectBody(await read(ctx), ['worker_id', ...fields]);
    const errors: FieldError[] = [];
    const holder = holderOf(ctx, b, errors);
    return { b, errors, holder, run: findRun(deps, String(ctx.params.id)) };
  };

  router.post(`${WORKER_PATH}/runs/:id/heartbeat`, worker, async (ctx) => {
    const { errors, holder, run } = await leaseRequest(ctx, []);
    refuse(errors);
    const held = store.leases.renew(run.run_id, holder, leaseMs);
    if (held === LEASE_LOST) throw lost(run.run_id);
    ctx.body = { cancel: held.cancel };
  });

  router.post(`${WORKER_PATH}/runs/:id/events`, worker, async (ctx) => {
    const { b, errors, holder, run } = await leaseRequest(ctx, ['events']);
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
    const held = store.leases.appendEvents(run.run_id, holder, leaseMs, events as { type: string; data: Record<string, unknown> }[]);
    if (held === LEASE_LOST) throw lost(run.run_id);
    ctx.body = { cancel: held.cancel };
  });

  router.post(`${WORKER_PATH}/runs/:id/finish`, worker, async (ctx) => {
    const { b, errors, holder, run } = await leaseRequest(ctx, ['state', 'status_message', 'error_code']);
    if (typeof b.state !== 'string' || !(FINAL as string[]).includes(b.state)) errors.push({ pointer: '/state', message: `state must be one of ${FINAL.join(', ')}` });
    if (b.status_message !== undefined && b.status_message !== null && (typeof b.status_message !== 'string' || b.status_message.length > 4096)) {
      errors.push({ pointer: '/status_message', message: 'status_message must be a string of at most 4096 characters, or null' });
    }
    if (b.error_code !== undefined && b.error_code !== null && !(RUN_ERROR_CODES as readonly unknown[]).includes(b.error_code)) {
      errors.push({ pointer: '/error_code', message: `error_code must be one of ${RUN_ERROR_CODES.join(', ')}, or null` });
    }
    if (b.state === 'SUCCEEDED' && (b.error_code ?? null) !== null) errors.push({ pointer: '/error_code', message: 'a SUCCEEDED run has no error_code' });
    refuse(errors);
    const state = b.state as FinalState;
    const ended = store.leases.finish(run.run_id, holder, state, {
      statusMessage: (b.status_message as string | null | undefined) ?? undefined,
      errorCode: (b.error_code as string | null | undefined) ?? undefined,
      // Only an ERROR is the platform's failure: a retry may succeed (docs/api.md#retry).
      retryable: state === 'ERROR',
    });
    if (ended === LEASE_LOST) throw lost(run.run_id);
    deps.log.info({ runId: run.run_id, state, worker: holder.name }, 'run finished by a worker');
    ctx.body = runView(ended, config.baseUrl);
  });
};
