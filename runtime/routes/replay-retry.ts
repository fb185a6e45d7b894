import type { Context } from 'koa';
import { conflict, invalidRequest, notFound } from '../../core/errors.ts';
import { replayDelivery } from '../automations/replay.ts';
import { runsQueued } from '../executor/lease-sweeper.ts';
import { canManageFactory, principalOf, requireScope, factoriesOf } from '../http/auth.ts';
import { noBody, readJsonBody } from '../http/body.ts';
import type { NewRun } from '../store/runs.ts';
import type { RouteModule } from './index.ts';
import { creatorOf, findRun, RUNS_PATH, runView } from './runs.ts';
import { unknownWebhookDetail } from '../ingress/lifecycle.ts';
import { webhookFactory } from './webhooks-manage.ts';
import { runEnvironment } from '../executor/prepare.ts';
import { echoed } from '../../core/text.ts';

/**
 * Starting runs again (docs/api.md#retry, docs/ingress.md#replay):
 *
 *   POST /api/v1/webhooks/:uid/deliveries/:delivery_id/replay   scope manage (the webhook's factory)
 *   POST /api/v1/agent/runs/:id/retry                           scope runs
 */
export const replayRetryRoutes: RouteModule = (router, deps) => {
  const { store, config } = deps;
  const wake = () => runsQueued(deps.services);

  router.post('/api/v1/webhooks/:uid/deliveries/:delivery_id/replay', requireScope('manage', webhookFactory), async (ctx) => {
    const uid = String(ctx.params.uid);
    const webhook = store.defs.getWebhookByUid(uid);
    const principal = principalOf(ctx);
    if (!webhook || !canManageFactory(principal, webhook.factory)) throw notFound(unknownWebhookDetail(uid));
    const only = replayAutomation(await optionalJson(ctx, config.limits.apiBodyBytes));
    const id = String(ctx.params.delivery_id);
    const entry = store.deliveries.get(uid, id);
    if (!entry) throw notFound(`The webhook ${uid} has no delivery ${echoed(id)} in its log.`);
    const runs = replayDelivery(store, webhook, entry, creatorOf(principal), only);
    if (runs.length) wake();
    ctx.status = runs.length ? 201 : 200;
    ctx.body = {
      webhook_uid: uid,
      delivery_id: id,
      runs: runs.map((r) => runView(r, config.baseUrl)),
      ...(runs.length ? {} : { detail: `No enabled automation of the factory "${webhook.factory}" matches this delivery now; no run was started.` }),
    };
  });

  router.post(`${RUNS_PATH}/:id/retry`, requireScope('runs'), noBody, (ctx) => {
    const run = findRun(deps, String(ctx.params.id), principalOf(ctx));
    if (run.state !== 'FAILED' && run.state !== 'ERROR') {
      throw conflict(`The run "${run.run_id}" is ${run.state}; only a FAILED or ERROR run can be retried.`);
    }
    // What the executor would fail the new run for at once is refused here, in its words.
    const environment = runEnvironment(store, run);
    if ('problem' in environment) {
      throw conflict(`The environment "${run.config.environment_id}" of run "${run.run_id}" ${environment.problem}, so it cannot be retried.`);
    }
    // A key limited to some factories retries into theirs only: an API run's environment that has
    // moved to another factory since is refused, without naming that factory.
    const factories = factoriesOf(principalOf(ctx));
    if (factories !== null && !factories.includes(environment.record.factory)) {
      throw conflict(`The environment "${run.config.environment_id}" of run "${run.run_id}" now belongs to a factory this API key may not use, so it cannot be retried.`);
    }
    const attachments = store.runs.attachmentBytes(run.run_id);
    // The same input and attribution; the new run points back at the one it retries.
    const input: NewRun = {
      prompt: run.prompt,
      environmentId: run.config.environment_id,
      title: run.title,
      metadata: run.metadata,
      source: run.source,
      creator: run.creator,
      factory: run.factory,
      automation: run.automation,
      webhookUid: run.webhook_uid,
      deliveryId: run.delivery_id,
      deliverySeq: store.runs.entryOf(run.run_id),
      attachments: attachments.length ? attachments : undefined,
      oz: store.runs.ozOf(run.run_id),
      schedule: run.schedule,
      retryOf: run.run_id,
      replay: run.replay_of ? { by: run.replay_of.by } : null,
      notify: store.runs.notifyOf(run.run_id) ?? null,
    };
    const created = store.runs.create(input);
    wake();
    ctx.status = 201;
    ctx.set('Location', `${RUNS_PATH}/${created.run_id}`);
    ctx.body = runView(created, config.baseUrl);
  });
};

async function optionalJson(ctx: Context, limit: number): Promise<unknown> {
  const length = ctx.get('Content-Length');
  if ((length === '' || length === '0') && !ctx.get('Transfer-Encoding')) return {};
  return readJsonBody(ctx, { limit });
}

/** The replay body: `{}` or `{automation: NAME}`. */
function replayAutomation(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidRequest('The request body must be a JSON object {automation?}.');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (key !== 'automation') throw invalidRequest(`Unknown field "${key}"; only "automation" is accepted.`, [{ pointer: `/${key}`, message: 'unknown field' }]);
  }
  if (b.automation === undefined || b.automation === null) return undefined;
  if (typeof b.automation !== 'string' || b.automation === '') {
    throw invalidRequest('automation must be the name of an automation.', [{ pointer: '/automation', message: 'must be a non-empty string' }]);
  }
  return b.automation;
}
