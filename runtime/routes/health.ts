import { FactoryError } from '../../core/errors.ts';
import type { RouteModule } from './index.ts';

/** `GET /healthz`: the process is up. `GET /readyz`: the database answers (503 otherwise). */
export const healthRoutes: RouteModule = (router, { store }) => {
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', (ctx) => {
    if (!store.ping()) throw new FactoryError('service_unavailable', 'The database is not reachable.');
    ctx.body = { status: 'ok' };
  });
};
