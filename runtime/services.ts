import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import type { Store } from './store/index.ts';
import { ingressService } from './ingress/service.ts';
import { executorService } from './executor/pool.ts';
import { leaseSweeperService } from './executor/lease-sweeper.ts';
import { schedulerService } from './automations/scheduler.ts';
import { notifierService } from './notifications/notifier.ts';
import { metricsService } from './metrics.ts';

/** Something that runs alongside the HTTP server, e.g. the executor pool. */
export interface Service {
  /** Called once the store is open and the port is bound, before the first request is handled. */
  start?(): void | Promise<void>;
  /** Called after the server stopped accepting and in-flight requests finished, before the store closes. */
  stop?(): void | Promise<void>;
  /** Called when the server stops accepting, before in-flight requests finish: end long polls now. */
  drain?(): void;
}

/**
 * The open bag of services that routes receive as `deps.services`. A service module may type
 * its entry by augmenting this interface:
 * `declare module '../services.ts' { interface Services { executor?: ExecutorPool } }`.
 */
export interface Services {
  [name: string]: unknown;
}

export interface ServiceDeps {
  config: Config;
  store: Store;
  clock: Clock;
  log: Logger;
  /** The services created before this one (in SERVICES order). */
  services: Services;
}

export interface ServiceFactory {
  name: string;
  create(deps: ServiceDeps): Service;
  /** False: not created under this config (the executor under --no-executor). Default true. */
  enabled?(config: Config): boolean;
}

/**
 * Every service startServer creates, in start order (stopped in reverse). Each owner adds one
 * import and one entry.
 */
export const SERVICES: ServiceFactory[] = [ingressService, executorService, leaseSweeperService, schedulerService, metricsService, notifierService];
