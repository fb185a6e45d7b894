import type { Context, Middleware } from 'koa';
import { FactoryError, notFound } from '../../core/errors.ts';
import type { KeyKind, Scope } from '../store/keys.ts';
import type { Store } from '../store/index.ts';
import { echoed } from '../../core/text.ts';

/** Who is calling: the API key that authenticated the request (docs/runtime.md). */
export interface Principal {
  keyId: string;
  name: string;
  kind: KeyKind;
  scopes: Scope[];
  /** Factories a `manage` key is limited to; null means every factory. */
  factories: string[] | null;
}

const BEARER = /^Bearer +([A-Za-z0-9_\-.~+/=]+) *$/i;

const unauthenticated = (detail: string) =>
  new FactoryError('authentication_required', detail, { headers: { 'WWW-Authenticate': 'Bearer' } });

/**
 * The principal of a request's `Authorization: Bearer <key>`, or undefined when there is no
 * Authorization header. A malformed header, an unknown key or a revoked key throws 401.
 */
export function tryAuthenticate(ctx: Context, store: Store): Principal | undefined {
  if (ctx.state.principal) return ctx.state.principal as Principal;
  const header = ctx.get('Authorization');
  if (!header) return undefined;
  const m = BEARER.exec(header);
  if (!m) throw unauthenticated('The Authorization header must be "Bearer <API key>".');
  const key = store.keys.findByRaw(m[1]);
  // One message for unknown and revoked keys: nothing tells a caller which keys existed.
  if (!key || key.revoked_at) throw unauthenticated('The API key is not valid or has been revoked.');
  const principal: Principal = { keyId: key.id, name: key.name, kind: key.kind, scopes: key.scopes, factories: key.factories };
  ctx.state.principal = principal;
  return principal;
}

/**
 * Throws the 401 of a revoked key when the principal's key was revoked (or is gone) since the
 * request authenticated: for a request that waits (a worker's claim), so that revoking stays
 * immediate for it too (docs/runtime.md#api-keys-and-scopes).
 */
export function assertStillValid(principal: Principal, store: Store): void {
  const key = store.keys.get(principal.keyId);
  if (!key || key.revoked_at) throw unauthenticated('The API key is not valid or has been revoked.');
}

/** Like tryAuthenticate, but a missing key is a 401 too. */
export function authenticate(ctx: Context, store: Store): Principal {
  const principal = tryAuthenticate(ctx, store);
  if (!principal) throw unauthenticated('This request needs an API key: send "Authorization: Bearer <key>".');
  return principal;
}

/** The principal that requireScope put on the context. */
export function principalOf(ctx: Context): Principal {
  const p = ctx.state.principal as Principal | undefined;
  if (!p) throw new Error('principalOf called on a route without requireScope');
  return p;
}

/** `admin` implies every scope; `runs` and `manage` are independent of each other. */
export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes.includes('admin') || principal.scopes.includes(scope);
}

/**
 * The factories this principal reaches, with each of its scopes alike (docs/runtime.md#factory-limited-keys):
 * those its key is limited to, or null for every factory (an unlimited key, or `admin`).
 */
export function factoriesOf(principal: Principal): readonly string[] | null {
  return principal.scopes.includes('admin') ? null : principal.factories;
}

/** May this principal manage `factory`? */
export function canManageFactory(principal: Principal, factory: string): boolean {
  if (!hasScope(principal, 'manage')) return false;
  const factories = factoriesOf(principal);
  return factories === null || factories.includes(factory);
}

export interface RequireScopeOptions {
  /**
   * The factory the request acts on, when the route knows it (a path parameter, or the factory of
   * the webhook in the path). A `manage` key limited to other factories gets a 404, exactly like
   * a factory or webhook that does not exist: a 403 would confirm that it exists and name its
   * factory. Routes that span factories (lists) filter with canManageFactory instead. `null`
   * means the resource does not exist: the same 404, for every key, before the route reads a
   * body or checks its query (so that an unknown resource and another factory's answer alike).
   */
  factory?: (ctx: Context) => string | null | undefined;
  /**
   * The 404 detail for a factory the key may not manage: the route's own "not found" sentence, so
   * that the answer cannot be told apart from an unknown resource's. The default suits routes
   * whose resource is the factory itself.
   */
  notFound?: (ctx: Context) => string;
}

/** The 404 detail of a factory the key may not manage, for routes whose resource is the factory. */
const unknownFactoryDetail = (factory: string) => `There is no factory "${echoed(factory)}" that this API key may manage.`;

/**
 * Route middleware: authenticates (401 authentication_required) and checks the scope
 * (403 not_authorized), then the factory (404 resource_not_found, see RequireScopeOptions). Puts
 * the principal on `ctx.state.principal`. The store comes from `ctx.deps`, which createApp sets.
 */
export function requireScope(scope: Scope, options: RequireScopeOptions = {}): Middleware {
  return async (ctx, next) => {
    const principal = authenticate(ctx, ctx.deps.store);
    if (!hasScope(principal, scope)) {
      throw new FactoryError('not_authorized', `This API key does not have the "${scope}" scope.`);
    }
    if (scope === 'manage' && options.factory) {
      const factory = options.factory(ctx);
      if (factory === null || (factory !== undefined && !canManageFactory(principal, factory))) {
        throw notFound(options.notFound ? options.notFound(ctx) : unknownFactoryDetail(factory ?? ''));
      }
    }
    await next();
  };
}
