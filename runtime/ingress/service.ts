import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Service, ServiceFactory } from '../services.ts';
import type { Store } from '../store/index.ts';
import { createIngressState, type IngressState } from './state.ts';

/** How often the delivery log and the identities are pruned in the background (SPEC 7.7). */
export const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Applies the retention of SPEC 7.7 and 7.4 once: log entries outside the newest
 * `deliveryLogKeep` per webhook and older than `deliveryLogDays` go (with their payloads);
 * identities older than `identityDays` are forgotten.
 */
export function pruneDeliveryLog(store: Store, clock: Clock, limits: Config['limits']) {
  return store.deliveries.prune(clock.now(), {
    keep: limits.deliveryLogKeep,
    days: limits.deliveryLogDays,
    identityDays: limits.identityDays,
  });
}

export type IngressService = Service & IngressState;

/**
 * The ingress as a server service (`services.ingress`): holds the in-memory state the route
 * uses, and prunes the delivery log at start and every PRUNE_EVERY_MS.
 */
export const ingressService: ServiceFactory = {
  name: 'ingress',
  create({ config, store, clock, log }): IngressService {
    let timer: NodeJS.Timeout | undefined;
    const prune = () => {
      try {
        const gone = pruneDeliveryLog(store, clock, config.limits);
        if (gone.entries || gone.identities) log.info(gone, 'pruned the delivery log');
      } catch (err) {
        log.error({ err }, 'pruning the delivery log failed');
      }
    };
    return {
      ...createIngressState(config, store, clock),
      start() {
        prune();
        timer = setInterval(prune, PRUNE_EVERY_MS);
        timer.unref();
      },
      stop() {
        if (timer) clearInterval(timer);
      },
    };
  },
};
