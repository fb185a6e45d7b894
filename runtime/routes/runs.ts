import type { Context } from 'koa';
import { canonicalJson, sha256Hex } from '../../core/canonical-json.ts';
import { FactoryError, invalidRequest, notFound } from '../../core/errors.ts';
import { isFinal } from '../../core/run-state.ts';
import { newStandardWebhooksSecret } from '../../core/ids.ts';
import { notifyAllowed } from '../../core/notify.ts';
import type { AppDeps } from '../app.ts';
import { principalOf, requireScope, factoriesOf, type Principal } from '../http/auth.ts';
import { noBody, readJsonBody } from '../http/body.ts';
import { runsQueued } from '../executor/lease-sweeper.ts';
import { GroupCommit } from '../store/group-commit.ts';
import { CANCEL_CHANNEL } from '../store/leases.ts';
import type { NewRunItem, RunRecord } from '../store/runs.ts';
import type { RouteModule } from './index.ts';
import { parseAfter, parseCreateRun, parseListRuns } from './run-input.ts';
import { invalidQuery, queryParams } from '../http/query.ts';
import { echoed, titleFromPrompt } from '../../core/text.ts';
import { CANCELLED_INPUT } from '../store/leases.ts';

export const RUNS_PATH = '/api/v1/agent/runs';
/** Where oz-agent-sdk 1.0.0-alpha.8 creates runs (`client.agent.run`); the same as POST RUNS_PATH. */
const OZ_RUN_PATH = '/api/v1/agent/run';
/** Transcript events per response; `?after=` continues. */
export const TRANSCRIPT_PAGE = 1000;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The run as the API shows it (docs/api.md#runs): `session_link` once it SUCCEEDED, or FAILED after
 * starting; a run created without a title is titled by its prompt's first line.
 */
export function runView(run: RunRecord, baseUrl: string): RunRecord & { title: string; session_link: string | null } {
  const linked = run.state === 'SUCCEEDED' || (run.state === 'FAILED' && run.started_at !== null);
  return { ...run, title: run.title ?? titleFromPrompt(run.prompt), session_link: linked ? `${baseUrl}/sessions/${run.run_id}` : null };
}

/** Who a run created through the API is attributed to: a personal key's user or an agent key's agent. */
export function creatorOf(p: Principal): { type: 'user' | 'agent'; name: string } {
  return { type: p.kind === 'agent' ? 'agent' : 'user', name: p.name };
}

/**
 * The environment of a create without config.environment_id (Oz uses the team's default): the
 * runtime's only environment, else a 400 that lists them (docs/api.md#oz-compatibility).
 */
function onlyEnvironment(deps: AppDeps, factories: readonly string[] | null): string {
  // A key limited to some factories is told of theirs only (docs/runtime.md#factory-limited-keys).
  const all = deps.store.defs.listEnvironments().filter((e) => factories === null || factories.includes(e.factory)).map((e) => e.name);
  if (all.length === 1) return all[0];
  const which = all.length === 0 ? 'this runtime has no environment yet; apply a factory that defines one' : `this runtime has ${all.length}: ${all.join(', ')}`;
  throw invalidRequest(`config.environment_id is required: ${which}.`, [{ pointer: '/config/environment_id', message: 'config.environment_id is required' }]);
}

/**
 * A run or 404. With `principal`, a run of a factory the key is not limited to is the same 404 as
 * an unknown id (docs/runtime.md#factory-limited-keys): a 403 would confirm that the run exists.
 */
export function findRun(deps: AppDeps, runId: string, principal?: Principal): RunRecord {
  const run = deps.store.runs.get(runId);
  const factories = principal ? factoriesOf(principal) : null;
  if (!run || (factories !== null && !factories.includes(deps.store.runs.ownerOf(runId) ?? ''))) {
    throw notFound(`No run has the id "${echoed(runId)}".`);
  }
  return run;
}

/** The transcript page after `after`, as both the API and the session page serve it. */
export function transcriptBody(deps: AppDeps, ctx: Context, run: RunRecord) {
  const after = parseAfter(ctx.query.after);
  if (typeof after !== 'number') throw invalidQuery([after]);
  const events = deps.store.runs.events(run.run_id, after, TRANSCRIPT_PAGE + 1);
  const page = events.slice(0, TRANSCRIPT_PAGE);
  return {
    run_id: run.run_id,
    state: run.state,
    finished: isFinal(run.state),
    events: page,
    next_after: page.at(-1)?.seq ?? after,
    has_more: events.length > TRANSCRIPT_PAGE,
  };
}

/** The agent run API (docs/api.md), scope `runs`. */
export const runRoutes: RouteModule = (router, deps) => {
  const { store, config } = deps;
  const runs = requireScope('runs');
  const creates = new GroupCommit(
    (items: readonly NewRunItem[]) => store.runs.createBatch(items),
    // Looked up at each commit: the ingress state may be made after these routes (docs/runtime.md#metrics).
    (size) => deps.services.ingress?.metrics.batchSize.runs.observe(size),
    store.walSync,
  );

  /** The run's notification target: allowed by --notify-allow, with the given secret or a new one. */
  const notifyTarget = (webhook: { url: string; secret?: string } | null) => {
    if (!webhook) return undefined;
    if (!notifyAllowed(webhook.url, config.notify.allow)) {
      throw invalidRequest('webhook.url is not a target this runtime may notify (its operator limits them with --notify-allow).', [
        { pointer: '/webhook/url', message: 'the host is not in the runtime\'s notification allow-list' },
      ]);
    }
    return { url: webhook.url, secret: webhook.secret ?? newStandardWebhooksSecret() };
  };

  const create = async (ctx: Context) => {
    const idemKey = ctx.get('Idempotency-Key');
    if (idemKey && !IDEMPOTENCY_KEY.test(idemKey)) {
      throw invalidRequest('The Idempotency-Key header must be 1 to 255 visible ASCII characters.', [
        { pointer: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' },
      ]);
    }
    const body = await readJsonBody(ctx, { limit: config.limits.runCreateBodyBytes });
    // The larger cap is room for images only: the rest (the prompt above all, which every view
    // of the run carries) keeps the 1 MiB of every other route.
    const rest = body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body, images: undefined } : body;
    if (Buffer.byteLength(JSON.stringify(rest) ?? '') > config.limits.apiBodyBytes) {
      throw new FactoryError('payload_too_large', `The run request is larger than ${config.limits.apiBodyBytes} bytes without its images; only images may take it up to ${config.limits.runCreateBodyBytes} bytes.`);
    }
    const parsed = parseCreateRun(body);
    if (!parsed.value) {
      const first = parsed.errors[0];
      throw invalidRequest(`The run request is not valid: ${first.pointer || 'body'}: ${first.message}.`, parsed.errors);
    }
    const input = parsed.value;
    const principal = principalOf(ctx);
    const factories = factoriesOf(principal);
    const environmentId = input.environmentId ?? onlyEnvironment(deps, factories);
    const environment = store.defs.getEnvironmentRecord(environmentId);
    // Another factory's environment, for a key limited to some, is answered as an unknown one.
    if (!environment || (factories !== null && !factories.includes(environment.factory))) {
      throw invalidRequest(`There is no environment "${environmentId}"; apply a factory that defines it first.`, [
        { pointer: '/config/environment_id', message: `unknown environment "${environmentId}"` },
      ]);
    }
    const newRun = {
      prompt: input.prompt,
      environmentId,
      title: input.title,
      metadata: input.metadata,
      oz: input.oz,
      attachments: input.images.length ? input.images : undefined,
      notify: notifyTarget(input.webhook),
      source: 'API' as const,
      creator: creatorOf(principal),
    };
    // Group commit: the 201 follows the (fsynced) commit that holds the run.
    const { run, created } = await creates.submit({
      input: newRun,
      idem: idemKey ? { keyId: principal.keyId, key: idemKey, requestHash: sha256Hex(canonicalJson(body)) } : undefined,
    });
    // The run starts asynchronously (docs/api.md): answer first, then let the pool claim it.
    if (created) {
      runsQueued(deps.services);
    }
    ctx.status = created ? 201 : 200;
    ctx.set('Location', `${RUNS_PATH}/${run.run_id}`);
    // A generated notification secret is shown in the answer that created the run, and again to
    // the same key repeating the same request under its Idempotency-Key: a client whose 201 was
    // lost would otherwise never learn it. Never anywhere else.
    let shown = {};
    if (input.webhook && input.webhook.secret === undefined) {
      const notify = created ? newRun.notify : store.runs.notifyOf(run.run_id);
      if (notify?.secret !== undefined) shown = { webhook: { url: notify.url, secret: notify.secret } };
    }
    ctx.body = { ...runView(run, config.baseUrl), ...shown };
  };
  router.post(RUNS_PATH, runs, create);
  router.post(OZ_RUN_PATH, runs, create);

  router.get(RUNS_PATH, runs, (ctx) => {
    const parsed = parseListRuns(ctx.query, config.limits);
    if (!parsed.value) throw invalidQuery(parsed.errors);
    const factories = factoriesOf(principalOf(ctx));
    const page = store.runs.list(factories === null ? parsed.value : { ...parsed.value, owners: factories });
    ctx.body = {
      runs: page.runs.map((r) => runView(r, config.baseUrl)),
      page_info: { has_next_page: page.nextCursor !== null, next_cursor: page.nextCursor },
    };
  });

  router.get(`${RUNS_PATH}/:id`, runs, (ctx) => {
    const run = findRun(deps, String(ctx.params.id), principalOf(ctx));
    ctx.body = { ...runView(run, config.baseUrl), ...(run.webhook ? { notifications: store.runs.notifications(run.run_id) } : {}) };
  });

  router.post(`${RUNS_PATH}/:id/cancel`, runs, noBody, (ctx) => {
    const run = findRun(deps, String(ctx.params.id), principalOf(ctx));
    if (isFinal(run.state)) {
      throw new FactoryError('operation_not_supported', `The run "${run.run_id}" already finished (${run.state}); only a QUEUED or INPROGRESS run can be cancelled.`);
    }
    // No await from the read above to here: the run cannot have moved in between.
    if (run.state === 'QUEUED') {
      store.runs.finish(run.run_id, 'CANCELLED', { statusMessage: 'the run was cancelled before it started', errorCode: 'cancelled', retryable: false });
    } else if (deps.services.executor?.cancel(run.run_id)) {
      // Executed here: the job stops and the run ends CANCELLED.
    } else if (store.leases.requestCancel(run.run_id)) {
      // Executed elsewhere (a worker, another replica): its holder stops it at its next heartbeat,
      // or at once when it listens on the channel (docs/runs.md#workers).
      store.notify(CANCEL_CHANNEL, run.run_id);
    } else {
      // INPROGRESS but no live holder: nothing is left to stop.
      store.runs.finish(run.run_id, 'CANCELLED', CANCELLED_INPUT);
    }
    ctx.body = { run_id: run.run_id };
  });

  router.get(`${RUNS_PATH}/:id/transcript`, runs, queryParams(['after']), (ctx) => {
    ctx.body = transcriptBody(deps, ctx, findRun(deps, String(ctx.params.id), principalOf(ctx)));
  });
};
