import { FactoryError } from '../../core/errors.ts';
import { writeProblem } from '../http/problem.ts';
import type { RouteModule } from './index.ts';

/**
 * The answer of `GET /healthz`: the same type and bytes whether the app gives it or the start path
 * does, before the app is loaded (server.ts `answerWhileStarting`).
 */
export const HEALTHY = { type: 'application/json; charset=utf-8', body: JSON.stringify({ status: 'ok' }) } as const;

/**
 * `GET /healthz`: the process is up. `GET /readyz`: the database answers, takes writes and is not
 * damaged, and which engine it is (503 otherwise, saying why), so a load balancer takes a replica
 * that lost its database, or cannot store what it is sent, out of rotation (docs/runtime.md#health).
 * Neither names the database's address: they need no key.
 */
export const healthRoutes: RouteModule = (router, { store, log }) => {
  router.get('/healthz', (ctx) => {
    // The same bytes Koa writes for the object, given as text: Koa tests an object body against
    // the global Response, whose first use loads Node's fetch (about 40 ms), and the first answer
    // of a starting runtime is usually this one (docs/runtime.md#health).
    ctx.type = HEALTHY.type;
    ctx.body = HEALTHY.body;
  });
  router.get('/readyz', (ctx) => {
    const engine = store.engine === 'postgres' ? 'PostgreSQL' : 'SQLite';
    if (!store.ping()) throw new FactoryError('service_unavailable', `The database (${engine}) is not reachable.`);
    // Written here rather than thrown: a load balancer asks every few seconds, and the storage
    // state has its own log lines.
    const loading = store.deliveries.loading();
    if (loading) return writeProblem(ctx, new FactoryError('service_unavailable', `The runtime is still reading its delivery claims (${loading.loaded} so far).`));
    const unready = store.health.unready(log);
    if (unready) return writeProblem(ctx, new FactoryError('service_unavailable', unready));
    ctx.body = { status: 'ok', database: { engine: store.engine, reachable: true } };
  });
};
