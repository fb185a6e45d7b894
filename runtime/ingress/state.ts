import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { CHANNELS, type Store } from '../store/index.ts';
import type { AcceptedHook } from './types.ts';
import { GroupCommit } from '../store/group-commit.ts';
import type { DeliveryWrite, WriteResult } from '../store/deliveries.ts';
import { IngressMetrics } from './metrics.ts';
import { RateLimiter, SharedRateLimiter, type Limiter } from './rate-limit.ts';
import { SecretCache } from './secret-cache.ts';

/**
 * The ingress's in-memory state for one app: rate-limit windows, the decrypted-secret cache,
 * counters, and the hooks run inside the Accepted transaction. Lives in `deps.services.ingress`
 * so that services (the automations' run creation, docs/automations.md) can reach it.
 */
export interface IngressState {
  /** In memory on SQLite; in the database when replicas share PostgreSQL (docs/deploy.md#several-replicas). */
  limiter: Limiter;
  secrets: SecretCache;
  metrics: IngressMetrics;
  /**
   * THE hook point for "matching automations → runs" (pipeline step 9 of docs/ingress.md,
   * docs/automations.md): each hook is called synchronously inside the transaction that writes the
   * Accepted delivery and its payload, with the webhook and the delivery. Push run creation here.
   */
  onAccepted: AcceptedHook[];
  /**
   * Every delivery-log write of concurrent requests (Accepted or Duplicate decisions, and
   * rejections), committed together (store/group-commit.ts): one fsync per event-loop turn, so a
   * flood of bad requests does not cost one each.
   */
  commits: GroupCommit<DeliveryWrite, WriteResult>;
}

declare module '../services.ts' {
  interface Services {
    ingress?: IngressState;
  }
}

/** Builds the state; `ingressService` does this at server start, createApp alone does it lazily. */
export function createIngressState(config: Config, store: Store, clock: Clock): IngressState {
  const metrics = new IngressMetrics();
  const secrets = new SecretCache((name, version) => store.secrets.reveal(name, version), () => clock.now().getTime());
  // A secret created, updated or deleted (here or, on PostgreSQL, by another replica) drops the
  // cache: a name deleted and created again starts at version 1 under another value.
  store.listen(CHANNELS.secrets, () => secrets.clear());
  return {
    limiter: store.engine === 'postgres' ? new SharedRateLimiter(clock, config.limits, store.rateWindows) : new RateLimiter(clock, config.limits),
    secrets,
    metrics,
    onAccepted: [],
    commits: new GroupCommit(
      (items) => store.deliveries.writeBatch(items, { identityDays: config.limits.identityDays, rejectedKeep: config.limits.rejectedLogKeep }),
      (size) => metrics.batchSize.deliveries.observe(size),
      store.walSync,
    ),
  };
}
