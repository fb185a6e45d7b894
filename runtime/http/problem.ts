import type { ServerResponse } from 'node:http';
import type { Context, Middleware } from 'koa';
import { ERROR_CODES, FactoryError, type ErrorCode } from '../../core/errors.ts';
import type { Logger } from '../log.ts';
import { redactUrl } from '../log.ts';
import { STORAGE_RETRY_AFTER_SECONDS, storageFailure, type StorageHealth } from '../store/storage-health.ts';

export const PROBLEM_TYPE_BASE = 'https://factory.dev/problems/';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The RFC 9457 body plus our fields (docs/api.md). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  error: string;
  retryable: boolean;
  errors?: { pointer: string; message: string }[];
}

const INTERNAL_DETAIL = 'The runtime failed to handle this request; the error has been logged.';

/**
 * The one middleware that turns errors into problem+json, and the one place that logs
 * an unexpected error (once, with its stack). 4xx details are shown to the client; a 5xx from an
 * unknown error only ever says INTERNAL_DETAIL. Also turns an unmatched route into a 404 problem
 * and a known route called with the wrong method (left as a bare 405 with Allow by the router's
 * allowedMethods) into a 405 problem.
 */
export function problemMiddleware(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body == null && ctx.status === 404) {
        throw new FactoryError('resource_not_found', `Nothing is at ${redactUrl(ctx.path)}.`);
      }
      if (ctx.body == null && (ctx.status === 405 || ctx.status === 501)) {
        const allow = ctx.response.get('Allow');
        throw new FactoryError('method_not_allowed', `${ctx.method} is not allowed here; use ${allow || 'another method'}.`, {
          headers: allow ? { Allow: allow } : undefined,
        });
      }
    } catch (err) {
      writeProblem(ctx, toFactoryError(err, ctx, log, ctx.deps?.store?.health));
    }
  };
}

/**
 * Maps anything thrown to a FactoryError; unknown errors are logged here and become a bare 500.
 * A storage failure (a full disk, a read-only file system, an I/O error, a damaged database:
 * store/storage-health.ts) becomes a 503 saying so, recorded in `health`, which logs it (one line
 * when writes start failing, not one stack per request: docs/runtime.md#when-storage-fails).
 * Exported for the ingress's raw node:http adapter (runtime/routes/ingress.ts), which answers
 * without Koa but must map and log errors exactly as this middleware does.
 */
export function toFactoryError(err: unknown, ctx: Pick<Context, 'method' | 'path'>, log: Logger, health?: StorageHealth): FactoryError {
  if (err instanceof FactoryError) {
    if (err.status >= 500) log.error({ err, method: ctx.method, path: redactUrl(ctx.path) }, 'request failed');
    return err;
  }
  // Errors from Koa and its helpers (http-errors: ctx.throw, ctx.assert) carry an exposable status.
  const e = err as { status?: unknown; expose?: unknown; message?: unknown; headers?: Record<string, string> };
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    const code = codeForStatus(e.status);
    const detail = e.expose && typeof e.message === 'string' && e.message ? e.message : ERROR_CODES[code].title + '.';
    return new FactoryError(code, detail, { headers: e.headers });
  }
  const storage = health ? health.failed(err, log) : storageFailure(err);
  if (storage) {
    if (!health) log.error({ code: storage.code, method: ctx.method, path: redactUrl(ctx.path) }, `writes fail: ${storage.reason}`);
    const reads = ctx.method === 'GET' || ctx.method === 'HEAD';
    const detail = reads
      ? `The runtime could not answer this request: ${storage.reason}. Retry later.`
      : `The runtime could not store this request: ${storage.reason}; nothing was stored. Retry later.`;
    return new FactoryError('service_unavailable', detail, { headers: { 'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS) }, cause: err });
  }
  log.error({ err, method: ctx.method, path: redactUrl(ctx.path) }, 'unhandled error');
  return new FactoryError('internal_error', INTERNAL_DETAIL);
}

function codeForStatus(status: number): ErrorCode {
  for (const [code, def] of Object.entries(ERROR_CODES)) if (def.status === status) return code as ErrorCode;
  return 'invalid_request';
}

/**
 * The headers every problem answer carries, whichever writer sends it (this middleware, the
 * ingress's raw adapter, the parser's refusals): the error's own, and `X-Should-Retry`. Oz's SDK
 * (and every client generated the same way) retries 408, 409, 429 and 5xx unless told otherwise:
 * it says what `retryable` says, so a permanent refusal is not sent three times.
 */
export function problemHeaders(err: FactoryError): Record<string, string> {
  return { 'X-Should-Retry': err.retryable ? 'true' : 'false', ...err.headers };
}

/**
 * Writes `err` as problem+json on a raw node:http response, for the answers given without Koa
 * (the ingress's adapter, an unusable request target, `/readyz` while starting): the same body and
 * headers as `writeProblem`, then `extra` headers; `head` sends the headers alone.
 */
export function writeRawProblem(res: ServerResponse, err: FactoryError, path: string, opts: { extra?: Record<string, string>; head?: boolean } = {}): void {
  const text = JSON.stringify(problemBody(err, path));
  res.writeHead(err.status, { ...problemHeaders(err), 'Content-Type': PROBLEM_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text), ...opts.extra });
  res.end(opts.head ? undefined : text);
}

/** Writes `err` as the response, replacing whatever headers the failed handler had set. */
export function writeProblem(ctx: Context, err: FactoryError): void {
  for (const name of ctx.response.headerSent ? [] : Object.keys(ctx.response.headers)) ctx.remove(name);
  ctx.status = err.status;
  for (const [name, value] of Object.entries(problemHeaders(err))) ctx.set(name, value);
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = problemBody(err, ctx.path);
}

/** The problem+json body for `err` at request path `path` (redacted); the one place it is built. */
export function problemBody(err: FactoryError, path: string): Problem {
  const problem: Problem = {
    type: PROBLEM_TYPE_BASE + err.code,
    title: err.title,
    status: err.status,
    detail: err.message,
    instance: redactUrl(path),
    code: err.code,
    error: err.message,
    retryable: err.retryable,
  };
  if (err.errors?.length) problem.errors = err.errors;
  return problem;
}
