import { Counter, Histogram, Registry } from 'prom-client';

/**
 * The ingress's counters, served by `GET /metrics` (docs/runtime.md#metrics). The hot path only
 * adds 1 to a plain number on an object cached per webhook (no labels built, no hashing per
 * request); the counts become Prometheus samples when a scrape asks for them. 404, 405 and 429
 * are not logged (docs/ingress.md) and are counted here all the same.
 */

/** What a request to a webhook ended as: the delivery log's outcomes, plus answers that are not logged. */
export const WEBHOOK_OUTCOMES = [
  'accepted',
  'duplicate',
  'handshake',
  'rejected_auth',
  'rejected_invalid_json',
  'rejected_too_large',
  'rate_limited',
] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/** One webhook's counts, by outcome; `aborted` requests are also in rejected_invalid_json. */
export type WebhookCounts = Record<WebhookOutcome | 'aborted', number>;

interface Entry {
  factory: string;
  webhook: string;
  counts: WebhookCounts;
}

/** Ingress latency buckets, in seconds: most answers take about a millisecond. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Group-commit batch sizes: from a lone delivery up to GroupCommit.MAX_BATCH. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export class IngressMetrics {
  /** The ingress's own registry; the metrics service merges it with the rest. */
  readonly registry = new Registry();
  /** Requests to an address where no webhook is (404), and non-POST requests (405). */
  not_found = 0;
  method_not_allowed = 0;
  /** Seconds from the request's arrival to the answer written, every ingress request. */
  readonly latency: Histogram;
  /** Writes per group commit (one transaction, one fsync), by writer: the delivery log, and the run API's creates. */
  readonly batchSize: { deliveries: { observe(size: number): void }; runs: { observe(size: number): void } };
  private readonly byWebhook = new Map<string, Entry>();

  constructor() {
    const entries = this.byWebhook;
    const self = this;
    new Counter({
      name: 'factory_deliveries_total',
      help: 'Requests to a webhook, by outcome: the delivery log outcomes, handshake (answered, no run) and rate_limited (429, not logged).',
      labelNames: ['factory', 'webhook', 'outcome'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const e of entries.values()) {
          for (const outcome of WEBHOOK_OUTCOMES) this.inc({ factory: e.factory, webhook: e.webhook, outcome }, e.counts[outcome]);
        }
      },
    });
    new Counter({
      name: 'factory_ingress_aborted_total',
      help: 'Deliveries whose sender closed the connection before the body ended (also counted as rejected_invalid_json).',
      labelNames: ['factory', 'webhook'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const e of entries.values()) this.inc({ factory: e.factory, webhook: e.webhook }, e.counts.aborted);
      },
    });
    new Counter({
      name: 'factory_ingress_unrouted_total',
      help: 'Ingress requests that reached no webhook: not_found (404: unknown, disabled or deleted) and method_not_allowed (405).',
      labelNames: ['reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ reason: 'not_found' }, self.not_found);
        this.inc({ reason: 'method_not_allowed' }, self.method_not_allowed);
      },
    });
    this.latency = new Histogram({
      name: 'factory_ingress_duration_seconds',
      help: 'Time from a webhook request arriving to its answer, including the group commit.',
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    const batches = new Histogram({
      name: 'factory_group_commit_batch_size',
      help: 'Writes committed together in one transaction, by writer: deliveries (the delivery log) or runs (run API creates).',
      labelNames: ['writer'],
      buckets: BATCH_BUCKETS,
      registers: [this.registry],
    });
    this.batchSize = { deliveries: batches.labels('deliveries'), runs: batches.labels('runs') };
  }

  /** The counts of one webhook, created at its first request and reused after (one Map lookup). */
  webhook(w: { uid: string; factory: string; name: string }): WebhookCounts {
    let e = this.byWebhook.get(w.uid);
    if (!e) {
      const counts = { aborted: 0 } as WebhookCounts;
      for (const o of WEBHOOK_OUTCOMES) counts[o] = 0;
      e = { factory: w.factory, webhook: w.name, counts };
      this.byWebhook.set(w.uid, e);
    }
    return e.counts;
  }
}
