import type { Context } from 'koa';
import { invalidRequest, notFound } from '../../core/errors.ts';
import { apiBodyProblems, type ApiBody } from '../../core/schemas.ts';
import { updateSecret } from '../ingress/lifecycle.ts';
import { noBody, readJsonBody } from '../http/body.ts';
import { requireScope } from '../http/auth.ts';
import type { RouteModule } from './index.ts';
import { queryParams } from '../http/query.ts';
import { echoed } from '../../core/text.ts';

/**
 * Team secrets (docs/runtime.md), admin scope. Values go in, never out: every response is metadata
 * (name, current_version, has_value, factories, timestamps).
 * - `POST /api/v1/secrets` `{name, value}` or `{name, pending: true}`, optional `factories` → 201
 * - `GET /api/v1/secrets` → `{secrets: [...]}`; `GET /api/v1/secrets/:name` → one
 * - `PUT /api/v1/secrets/:name` `{value, grace_seconds?}` → 200, a new version; with grace_seconds the
 *   webhooks bound to the secret move to it and their previous version verifies that long
 *   (docs/runtime.md#graceful-rotation)
 * - `PUT /api/v1/secrets/:name/factories` `{factories: [...] | null}` → 200, the list replaced
 * - `POST /api/v1/secrets/:name/grant` | `/revoke` `{factories: [...]}` → 200, factories added or taken off
 * - `DELETE /api/v1/secrets/:name` → 204
 * Which factories may use a secret is docs/runtime.md#which-factories-may-use-a-secret.
 */
/** Keywords whose problems the store states itself, in the words the CLI shows (names, values, factory names). */
const STORE_JUDGES = ['pattern', 'minLength', 'maxLength', 'minItems', 'maxItems'];

export const secretRoutes: RouteModule = (router, { config, store, clock }) => {
  const admin = requireScope('admin');
  /**
   * The body, checked against its schema under schemas/api/ (docs/api.md#openapi): unknown fields,
   * types, grace_seconds' range. Names, values and factory names are the store's to judge: its
   * sentences say what a valid one looks like, and the CLI shows them.
   */
  const readObject = async (ctx: Context, schema: ApiBody) => {
    const body = await readJsonBody(ctx, { limit: config.limits.apiBodyBytes });
    const problems = apiBodyProblems(schema, body, { skip: STORE_JUDGES });
    if (problems.length) throw invalidRequest(`The request is not valid: ${problems[0].pointer || 'body'}: ${problems[0].message}.`, problems);
    return body as Record<string, unknown>;
  };

  router.post('/api/v1/secrets', admin, async (ctx) => {
    const b = await readObject(ctx, 'secret-create');
    if (b.pending === true && b.value !== undefined) {
      throw invalidRequest('A pending secret has no value.', [{ pointer: '/value', message: 'omit the value, or drop pending' }]);
    }
    if (b.pending !== true && b.value === undefined) {
      throw invalidRequest('The secret needs a value, or pending: true.', [{ pointer: '/value', message: 'required unless pending is true' }]);
    }
    const meta = store.secrets.create(b.name as string, b.pending === true ? null : (b.value as string), (b.factories ?? null) as string[] | null);
    ctx.status = 201;
    ctx.set('Location', `/api/v1/secrets/${encodeURIComponent(meta.name)}`);
    ctx.body = meta;
  });

  router.get('/api/v1/secrets', admin, queryParams([]), (ctx) => {
    ctx.body = { secrets: store.secrets.list() };
  });

  router.get('/api/v1/secrets/:name', admin, (ctx) => {
    const meta = store.secrets.get(ctx.params.name);
    if (!meta) throw notFound(`No secret is named "${echoed(String(ctx.params.name))}".`);
    ctx.body = meta;
  });

  router.put('/api/v1/secrets/:name', admin, async (ctx) => {
    // The schema holds the value's presence and grace_seconds' range (0 to MAX_GRACE_SECONDS).
    const b = await readObject(ctx, 'secret-update');
    const grace = b.grace_seconds;
    const done = updateSecret(store, ctx.params.name, b.value as string, { graceSeconds: grace as number | undefined, now: clock.now() });
    // The secret's metadata as before, plus what a graceful rotation did.
    ctx.body = done.grace ? { ...done.secret, grace: done.grace } : done.secret;
  });

  /** The `factories` of a body: a list, or null (every factory) where `nullable`. */
  const factoriesOf = async (ctx: Context, nullable: boolean) => {
    const b = await readObject(ctx, 'factories-change');
    if (b.factories === null && !nullable) {
      throw invalidRequest('factories must be a list of factory names.', [{ pointer: '/factories', message: 'to let every factory use the secret, PUT /api/v1/secrets/<name>/factories {"factories": null}' }]);
    }
    return b.factories as string[] | null;
  };

  router.put('/api/v1/secrets/:name/factories', admin, async (ctx) => {
    ctx.body = store.secrets.setFactories(ctx.params.name, await factoriesOf(ctx, true));
  });

  router.post('/api/v1/secrets/:name/grant', admin, async (ctx) => {
    ctx.body = store.secrets.grant(ctx.params.name, (await factoriesOf(ctx, false))!);
  });

  router.post('/api/v1/secrets/:name/revoke', admin, async (ctx) => {
    ctx.body = store.secrets.revoke(ctx.params.name, (await factoriesOf(ctx, false))!);
  });

  router.delete('/api/v1/secrets/:name', admin, noBody, (ctx) => {
    store.secrets.delete(ctx.params.name);
    ctx.status = 204;
  });
};
