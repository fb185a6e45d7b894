import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import { Router } from '@koa/router';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import { FactoryError } from '../core/errors.ts';
import { problemMiddleware, writeRawProblem } from './http/problem.ts';
import { logRequest, msSince, type Logger } from './log.ts';
import { ROUTES } from './routes/index.ts';
import { ingressListener, isIngressUrl } from './routes/ingress.ts';
import type { IngressResult } from './ingress/pipeline.ts';
import type { Services } from './services.ts';
import type { Store } from './store/index.ts';

/** What every route module and middleware may use. */
export interface AppDeps {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  /** Open bag of long-running services (runtime/services.ts), e.g. the executor pool. */
  services: Services;
}

declare module 'koa' {
  interface DefaultContext {
    /** The app's dependencies, for middleware that is not built with them (e.g. requireScope). */
    deps: AppDeps;
  }
}

export interface CreateAppOptions extends Omit<AppDeps, 'services'> {
  services?: Services;
}

/** Error codes of a connection the client closed or reset while its request was read or answered. */
const CLIENT_GONE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE', 'ECANCELED']);

/**
 * Builds the Koa app without listening, so tests can drive it on port 0.
 * Middleware order: access log (sees the final status) → problem+json (the one error mapper)
 * → routes → allowedMethods (405 with Allow on a known path).
 */
export function createApp(options: CreateAppOptions): Koa {
  const deps: AppDeps = { ...options, services: options.services ?? {} };
  const app = new Koa({ proxy: deps.config.trustProxy });
  app.context.deps = deps;
  // Errors are logged by problemMiddleware; this only catches what escapes it (e.g. socket errors).
  // A client that breaks its own request (a body shorter than its Content-Length, a connection cut)
  // is logged in one line, without a stack: nothing here went wrong.
  app.silent = true;
  app.on('error', (err: unknown) => {
    const e = (err ?? {}) as { code?: unknown; status?: unknown; message?: unknown };
    const code = typeof e.code === 'string' ? e.code : undefined;
    const byClient = (code !== undefined && (code.startsWith('HPE_') || CLIENT_GONE.has(code))) || (typeof e.status === 'number' && e.status < 500);
    if (byClient) deps.log.info({ code, reason: String(e.message) }, 'client broke its request');
    else deps.log.warn({ err }, 'koa error');
  });

  app.use(accessLog(deps));
  app.use(problemMiddleware(deps.log));
  app.use(refuseNul);

  const router = new Router();
  for (const register of ROUTES) register(router, deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

/**
 * No id, name or value of this API holds a NUL character, and PostgreSQL could not even look one
 * up: `%00` in the path or the query is a 400 on either engine, before any route reads it.
 */
const refuseNul: Koa.Middleware = async (ctx, next) => {
  if (/%00/.test(ctx.url)) throw new FactoryError('invalid_request', 'The request\'s path or query has a NUL character (%00), which no id or value of this API holds.');
  await next();
};

/**
 * The node:http request listener for an app built by createApp: webhook deliveries
 * (`/webhooks/w/...`, docs/ingress.md#the-pipeline-step-by-step) go to the ingress's raw adapter,
 * the hot path, without Koa's context and middleware; everything else goes through Koa. See
 * runtime/routes/ingress.ts.
 */
export function appListener(app: Koa): (req: IncomingMessage, res: ServerResponse) => void {
  const koa = app.callback();
  const deps = app.context.deps as AppDeps;
  const ingress = ingressListener(deps);
  return (req, res) => {
    if (isIngressUrl(req.url)) ingress(req, res);
    else if (usableTarget(req.url)) void koa(req, res);
    else refuseTarget(req, res, deps.log);
  };
}

/**
 * A request target Koa can route: a path, or an absolute http(s) URL. Anything else (`http://`
 * without a host, `*`, a broken IPv6 literal) has no path at all, which Koa reports as a null
 * path; answered here instead (400), never as the 500 of a handler tripping over it.
 */
function usableTarget(url: string | undefined): boolean {
  if (url === undefined) return false;
  if (url.startsWith('/')) return true;
  if (!/^https?:\/\/[^/?#]+/i.test(url)) return false;
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

const BAD_TARGET = new FactoryError('invalid_request', 'The request target is neither a path nor an absolute http(s) URL with a host.');

function refuseTarget(req: IncomingMessage, res: ServerResponse, log: Logger): void {
  const start = performance.now();
  // Whatever body came with it is not read: the connection closes after the answer.
  writeRawProblem(res, BAD_TARGET, '/', { extra: { Connection: 'close' } });
  req.resume();
  // The target itself is not logged: it is whatever the client sent, with no path to redact.
  logRequest(log, { method: req.method ?? 'GET', url: '[unusable request target]', status: BAD_TARGET.status, ms: msSince(start) });
}

function accessLog({ log, services }: AppDeps): Koa.Middleware {
  return async (ctx, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      const ms = msSince(start);
      // The ingress's Koa route leaves what it logged, so its line and latency are the raw adapter's.
      const ingress = ctx.state.ingress as { delivery?: IngressResult['logged'] } | undefined;
      if (ingress) services.ingress?.metrics.latency.observe(ms / 1000);
      logRequest(log, { method: ctx.method, url: ctx.originalUrl, status: ctx.status, ms, delivery: ingress?.delivery });
    }
  };
}
