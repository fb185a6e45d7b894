import type { IncomingMessage, ServerResponse } from 'node:http';
import { FactoryError } from '../../core/errors.ts';
import type { AppDeps } from '../app.ts';
import { toFactoryError, writeRawProblem } from '../http/problem.ts';
import { DISCARD_LIMIT_BYTES, discardRest } from '../ingress/body.ts';
import { handleIngress, type IngressDeps, type IngressResult } from '../ingress/pipeline.ts';
import { createIngressState, type IngressState } from '../ingress/state.ts';
import type { IngressWebhook } from '../ingress/types.ts';
import { INGRESS_PREFIX } from '../ingress/url.ts';
import { logRequest, msSince } from '../log.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { AcceptResult } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import type { RouteModule } from './index.ts';

/**
 * `POST /webhooks/w/<uid>[/<token>]` (docs/ingress.md#the-pipeline-step-by-step): two thin adapters
 * around the framework-free pipeline (runtime/ingress/pipeline.ts).
 *
 * - `ingressListener`, the hot path: the server hands it every request whose URL starts with
 *   `/webhooks/w/` (app.ts `appListener`) and it answers on the raw node:http objects, without
 *   Koa's context and middleware, which cost more than the pipeline itself. Its problem bodies
 *   come from the same `problemBody` and `toFactoryError` as the problem middleware, and it
 *   writes the same access-log line, so nothing tells the two paths apart from outside.
 * - `ingressRoutes`, the Koa route: serves what reaches Koa anyway (`/webhooks/w` itself, an
 *   absolute-form request target, other letter case, or an app served by `app.callback()`).
 */
export const ingressRoutes: RouteModule = (router, { config, store, clock, services }) => {
  const state = (services.ingress ??= createIngressState(config, store, clock));
  const deps = ingressDeps(config, store, clock, state);

  router.all(['/webhooks/w', '/webhooks/w/{*rest}'], async (ctx) => {
    // Read by the access log (app.ts), which times it as an ingress request and logs its outcome.
    const seen: { delivery?: IngressResult['logged'] } = {};
    ctx.state.ingress = seen;
    const result = await handleIngress(
      { method: ctx.method, path: ctx.path, headers: ctx.req.headers, remoteAddress: ctx.req.socket.remoteAddress, body: ctx.req },
      deps,
    );
    seen.delivery = result.logged;
    handleUnread(result, ctx.req, ctx.res);
    if (result.problem) {
      throw new FactoryError(result.problem.code, result.problem.detail, { headers: result.headers });
    }
    ctx.status = result.status;
    for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value);
    ctx.body = result.body;
  });
};

/** True for a request the raw adapter serves (the rest goes through Koa). */
export function isIngressUrl(url: string | undefined): boolean {
  return url !== undefined && url.startsWith(INGRESS_PREFIX);
}

/**
 * The raw node:http adapter (see the module comment). Builds the pipeline's dependencies once;
 * the returned listener serves one request whose URL starts with `/webhooks/w/`.
 */
export function ingressListener(app: AppDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { config, store, clock, services, log } = app;
  const state = (services.ingress ??= createIngressState(config, store, clock));
  const deps = ingressDeps(config, store, clock, state);
  const latency = state.metrics.latency;
  // The access-log line of app.ts, with the same fields (the token segment redacted), plus the
  // outcome the delivery log holds for it. Made once per listener, not once per request.
  const done = (start: number, method: string, url: string, status: number, delivery?: IngressResult['logged']) => {
    const ms = msSince(start);
    latency.observe(ms / 1000);
    logRequest(log, { method, url, status, ms, delivery });
  };
  return (req, res) => {
    const start = performance.now();
    const url = req.url ?? '/';
    const method = req.method ?? 'GET';
    const cut = url.search(/[?#]/);
    const path = cut === -1 ? url : url.slice(0, cut);
    handleIngress({ method, path, headers: req.headers, remoteAddress: req.socket.remoteAddress, body: req }, deps).then(
      (result) => {
        handleUnread(result, req, res);
        if (result.problem) {
          writeRawProblem(res, new FactoryError(result.problem.code, result.problem.detail, { headers: result.headers }), path);
        } else {
          const text = JSON.stringify(result.body);
          res.writeHead(result.status, {
            ...result.headers,
            'Content-Type': 'application/json; charset=utf-8',
            'Content-Length': Buffer.byteLength(text),
          });
          res.end(text);
        }
        done(start, method, url, result.status, result.logged);
      },
      (err: unknown) => {
        // Same mapping and logging as the problem middleware: an unknown error is logged once
        // and answered as a bare 500 (e.g. a hook that failed at pipeline step 9).
        const problem = toFactoryError(err, { method, path }, log, store.health);
        if (!res.headersSent) writeRawProblem(res, problem, path);
        else res.destroy();
        done(start, method, url, problem.status);
      },
    ).catch((err: unknown) => {
      // Writing the answer itself failed (Koa would swallow this too): never crash the process.
      log.warn({ err }, 'ingress response failed');
      res.destroy();
    });
  };
}

/**
 * When the body was not read to its end (401 before reading, 413): after the answer, discard
 * the rest so the client sees the answer, or close the connection when the declared body is too
 * big to be worth draining (pipeline step 5, docs/ingress.md). Sets `Connection: close` in that
 * case, so it must run before the headers are written.
 */
function handleUnread(result: IngressResult, req: IncomingMessage, res: ServerResponse): void {
  if (!result.unread) return;
  const { read, declared } = result.unread;
  const cut = declared !== undefined && declared > DISCARD_LIMIT_BYTES;
  if (cut) result.headers.Connection = 'close';
  res.once('finish', () => {
    if (cut) req.socket.destroySoon();
    else discardRest(req, read);
  });
}

/** Builds the pipeline's dependencies from the app's. */
function ingressDeps(config: Config, store: Store, clock: Clock, state: IngressState): IngressDeps {
  return {
    clock,
    limits: config.limits,
    trustProxy: config.trustProxy,
    // Live and enabled only, from the store's cache (no query per delivery; every change to a
    // webhook makes a new definitions generation, so it takes effect on the next request).
    findWebhook: (uid) => store.defs.servedWebhook(uid) as IngressWebhook | undefined,
    secrets: state.secrets,
    limiter: state.limiter,
    reject: (item) => state.commits.submit(item),
    accept: (item) => state.commits.submit(item) as Promise<AcceptResult>,
    metrics: state.metrics,
    onAccepted: state.onAccepted,
  };
}
