import { FactoryError } from '../../core/errors.ts';
import { DISCARD_LIMIT_BYTES, discardRest } from '../ingress/body.ts';
import { handleIngress, type IngressDeps } from '../ingress/pipeline.ts';
import { createIngressState, type IngressState } from '../ingress/state.ts';
import type { IngressWebhook } from '../ingress/types.ts';
import type { SignatureScheme } from '../../core/snapshot.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Store } from '../store/index.ts';
import type { RouteModule } from './index.ts';

/**
 * `POST /webhooks/w/<uid>[/<token>]` (SPEC 7): the thin Koa adapter around the framework-free
 * pipeline (runtime/ingress/pipeline.ts). Every method is routed here so that the pipeline
 * answers 405 itself; problems go through the one problem+json middleware.
 */
export const ingressRoutes: RouteModule = (router, { config, store, clock, services }) => {
  const state = (services.ingress ??= createIngressState(config, store, clock));
  const deps = ingressDeps(config, store, clock, state);

  router.all(['/webhooks/w', '/webhooks/w/{*rest}'], async (ctx) => {
    const result = await handleIngress(
      { method: ctx.method, path: ctx.path, headers: ctx.req.headers, remoteAddress: ctx.req.socket.remoteAddress, body: ctx.req },
      deps,
    );
    if (result.unread) {
      const { read, declared } = result.unread;
      const req = ctx.req;
      // A body too big to be worth draining: close the connection after the answer.
      const cut = declared !== undefined && declared > DISCARD_LIMIT_BYTES;
      if (cut) result.headers.Connection = 'close';
      ctx.res.once('finish', () => {
        if (cut) req.socket.destroySoon();
        else discardRest(req, read);
      });
    }
    if (result.problem) {
      throw new FactoryError(result.problem.code, result.problem.detail, { headers: result.headers });
    }
    ctx.status = result.status;
    for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
    ctx.body = result.body;
  });
};

/** Builds the pipeline's dependencies from the app's. */
function ingressDeps(config: Config, store: Store, clock: Clock, state: IngressState): IngressDeps {
  return {
    clock,
    limits: config.limits,
    trustProxy: config.trustProxy,
    findWebhook: (uid) => {
      const w = store.defs.getWebhookByUid(uid);
      if (!w || w.deletedAt || !w.enabled) return undefined;
      const hook: IngressWebhook = {
        uid: w.uid,
        factory: w.factory,
        name: w.name,
        authMode: w.authMode,
        signatureScheme: w.signatureScheme as SignatureScheme | null,
        secretName: w.secretName,
        secretVersion: w.secretVersion,
        deliveryIdHeader: w.deliveryIdHeader,
      };
      return hook;
    },
    secrets: state.secrets,
    limiter: state.limiter,
    deliveries: store.deliveries,
    metrics: state.metrics,
    onAccepted: state.onAccepted,
  };
}
