import { buildOpenApi } from '../../core/openapi.ts';
import type { RouteModule } from './index.ts';

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the API (docs/api.md#openapi), with
 * `servers` naming this runtime's base URL. No key: it describes routes, never holds data.
 */
export const openApiRoutes: RouteModule = (router, { config }) => {
  // Built once: the document depends only on the schemas and the base URL.
  const body = JSON.stringify(buildOpenApi({ baseUrl: config.baseUrl }));
  router.get('/api/v1/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = body;
  });
};
