import type { Router } from '@koa/router';
import type { AppDeps } from '../app.ts';
import { healthRoutes } from './health.ts';
import { keyRoutes } from './keys.ts';
import { secretRoutes } from './secrets.ts';
import { definitionsRoutes } from './definitions.ts';
import { ingressRoutes } from './ingress.ts';
import { webhooksManageRoutes } from './webhooks-manage.ts';
import { runRoutes } from './runs.ts';
import { sessionRoutes } from './sessions.ts';
import { automationRoutes } from './automations.ts';
import { dashboardRoutes } from './dashboard.ts';
import { replayRetryRoutes } from './replay-retry.ts';
import { openApiRoutes } from './openapi.ts';
import { scheduleRoutes } from './schedules.ts';
import { workerRoutes } from './worker.ts';

/** A route module adds its routes to the one router. */
export type RouteModule = (router: Router, deps: AppDeps) => void;

/** Every route module. Each owner adds one import and one entry. */
export const ROUTES: RouteModule[] = [healthRoutes, keyRoutes, secretRoutes, definitionsRoutes, ingressRoutes, webhooksManageRoutes, runRoutes, sessionRoutes, automationRoutes, dashboardRoutes, replayRetryRoutes, scheduleRoutes, workerRoutes, openApiRoutes];
