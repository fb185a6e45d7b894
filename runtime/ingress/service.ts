import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Service, ServiceFactory } from '../services.ts';
import type { PruneLimits } from '../store/deliveries.ts';
import type { Store } from '../store/index.ts';
import { createIngressState, type IngressState } from './state.ts';

/** How often the background upkeep of the delivery log starts a new pass (docs/ingress.md#delivery-log). */
export const PRUNE_EVERY_MS = 60_000;
/**
 * Pause between two steps of a pass that has work left: each step is one short transaction
 * (store/deliveries.ts PRUNE_BATCH rows at most), so requests get the event loop in between.
 */
export const PRUNE_STEP_GAP_MS = 20;

const pruneLimits = (limits: Config['limits']): PruneLimits => ({
  keep: limits.deliveryLogKeep,
  days: limits.deliveryLogDays,
  identityDays: limits.identityDays,
  rejectedKeep: limits.rejectedLogKeep,
});

/**
 * Applies the retention of docs/ingress.md#delivery-log and #identity at once, to the end: log
 * entries outside the newest `deliveryLogKeep` per webhook and older than `deliveryLogDays` go
 * (with their payloads); Rejected entries beyond the newest `rejectedLogKeep` of their webhook go;
 * identities older than `identityDays` are forgotten. The service does the same in small steps.
 */
export function pruneDeliveryLog(store: Store, clock: Clock, limits: Config['limits']) {
  return store.deliveries.prune(clock.now(), pruneLimits(limits));
}

export type IngressService = Service &
  IngressState & {
    /** Passes of the background upkeep finished since start (for tests and metrics). */
    readonly prunePasses: number;
  };

/**
 * The ingress as a server service (`services.ingress`): holds the in-memory state the route
 * uses, and keeps the delivery log pruned in the background: a pass right after start, then one
 * every PRUNE_EVERY_MS, each made of bounded steps PRUNE_STEP_GAP_MS apart, so neither start-up
 * nor a request ever waits for more than one step.
 */
export const ingressService: ServiceFactory = {
  name: 'ingress',
  create({ config, store, clock, log }): IngressService {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let passes = 0;
    const gone = { entries: 0, identities: 0, rejected: 0 };
    const step = () => {
      timer = undefined;
      if (stopped) return;
      let more = false;
      try {
        const s = store.deliveries.pruneStep(clock.now(), pruneLimits(config.limits));
        gone.entries += s.entries;
        gone.identities += s.identities;
        gone.rejected += s.rejected;
        more = s.more;
      } catch (err) {
        log.error({ err }, 'pruning the delivery log failed');
      }
      if (!more) {
        passes += 1;
        if (gone.entries || gone.identities || gone.rejected) log.info({ ...gone }, 'pruned the delivery log');
        gone.entries = gone.identities = gone.rejected = 0;
      }
      schedule(more ? PRUNE_STEP_GAP_MS : PRUNE_EVERY_MS);
    };
    const schedule = (ms: number) => {
      timer = setTimeout(step, ms);
      timer.unref();
    };
    return {
      ...createIngressState(config, store, clock),
      get prunePasses() {
        return passes;
      },
      start() {
        schedule(0);
      },
      stop() {
        stopped = true;
        if (timer) clearTimeout(timer);
      },
    };
  },
};
