import { invalidRequest } from '../../core/errors.ts';
import { noBody, readJsonBody } from '../http/body.ts';
import { requireScope } from '../http/auth.ts';
import type { KeyKind, Scope } from '../store/keys.ts';
import type { RouteModule } from './index.ts';
import { queryParams } from '../http/query.ts';

/**
 * API keys (docs/runtime.md), admin scope:
 * - `POST /api/v1/keys` `{name, kind, scopes, factories?}` → 201 the key plus `key` (the raw key, shown once);
 *   `scopes` defaults to `["runs"]`, `factories` (manage keys only) to every factory
 * - `GET /api/v1/keys` → `{keys: [...]}` (never a raw key or a hash)
 * - `POST /api/v1/keys/:id/revoke` → 200 the revoked key. POST rather than DELETE: the key is
 *   kept (listed with `revoked_at`), only its use stops.
 */
export const keyRoutes: RouteModule = (router, { config, store }) => {
  const admin = requireScope('admin');

  router.post('/api/v1/keys', admin, async (ctx) => {
    const body = await readJsonBody(ctx, { limit: config.limits.apiBodyBytes });
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('The body must be a JSON object.');
    const b = body as Record<string, unknown>;
    const unknown = Object.keys(b).filter((k) => !['name', 'kind', 'scopes', 'factories'].includes(k));
    if (unknown.length) {
      throw invalidRequest('The key has unknown fields.', unknown.map((k) => ({ pointer: `/${k}`, message: 'unknown field' })));
    }
    // The fields go to the store unchecked: store.keys.create validates every shape (400s only).
    const { id, raw, key } = store.keys.create({
      name: b.name as string,
      kind: b.kind as KeyKind,
      scopes: (b.scopes === undefined ? ['runs'] : b.scopes) as Scope[],
      factories: b.factories as string[] | null | undefined,
    });
    ctx.status = 201;
    ctx.set('Location', `/api/v1/keys/${id}`);
    ctx.body = { ...key, key: raw };
  });

  router.get('/api/v1/keys', admin, queryParams([]), (ctx) => {
    ctx.body = { keys: store.keys.list() };
  });

  router.post('/api/v1/keys/:id/revoke', admin, noBody, (ctx) => {
    ctx.body = store.keys.revoke(ctx.params.id);
  });
};
