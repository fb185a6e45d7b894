import { buildOpenApi } from '../../core/openapi.ts';
import type { RouteModule } from './index.ts';

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the API (docs/api.md#openapi), with
 * `servers` naming this runtime's base URL. No key: it describes routes, never holds data.
 */
export const openApiRoutes: RouteModule = (router, { config }) => {
  // Built once, when first asked for: the document depends only on the schemas and the base URL,
  // and building it is a measurable part of start-up that most runtimes never need.
  let body: string | undefined;
  router.get('/api/v1/openapi.json', (ctx) => {
    body ??= JSON.stringify(buildOpenApi({ baseUrl: config.baseUrl }));
    ctx.type = 'application/json';
    ctx.body = body;
  });
};
