import { FactoryError } from '../../core/errors.ts';
import type { RouteModule } from './index.ts';

/**
 * `GET /healthz`: the process is up. `GET /readyz`: the database answers, and which engine it is
 * (503 otherwise), so a load balancer takes a replica that lost its database out of rotation
 * (docs/runtime.md#health). Neither names the database's address: they need no key.
 */
export const healthRoutes: RouteModule = (router, { store }) => {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', (ctx) => {
    const engine = store.engine === 'postgres' ? 'PostgreSQL' : 'SQLite';
    if (!store.ping()) throw new FactoryError('service_unavailable', `The database (${engine}) is not reachable.`);
    ctx.body = { status: 'ok', database: { engine: store.engine, reachable: true } };
  });
};
