/**
 * The ingress's counters, served by `GET /metrics` (docs/runtime.md#metrics). The hot path only
 * adds 1 to a plain number on an object cached per webhook (no labels built, no hashing per
 * request); the counts become Prometheus samples when a scrape asks for them (runtime/metrics.ts,
 * which loads the Prometheus client only when metrics are on). 404, 405 and 429 are not logged
 * (docs/ingress.md) and are counted here all the same.
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

/** One webhook's names and counts. */
export interface WebhookEntry {
  factory: string;
  webhook: string;
  counts: WebhookCounts;
}

/** Ingress latency buckets, in seconds: most answers take about a millisecond. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Group-commit batch sizes: from a lone delivery up to GroupCommit.MAX_BATCH. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/**
 * A histogram as plain numbers: how many observations fell in each bucket (a value `v` falls in
 * the first bucket whose upper bound is at least `v`, or in the last, unbounded one), their sum
 * and their count. The cumulative `le` series are made from it at scrape time.
 */
export class Buckets {
  /** Per bucket, not cumulative; one more than `bounds`: the last counts values above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

export class IngressMetrics {
  /** Requests to an address where no webhook is (404), and non-POST requests (405). */
  not_found = 0;
  method_not_allowed = 0;
  /** Seconds from the request's arrival to the answer written, every ingress request. */
  readonly latency = new Buckets(LATENCY_BUCKETS);
  /** Writes per group commit (one transaction, one fsync), by writer: the delivery log, and the run API's creates. */
  readonly batchSize = { deliveries: new Buckets(BATCH_BUCKETS), runs: new Buckets(BATCH_BUCKETS) };
  private readonly byWebhook = new Map<string, WebhookEntry>();

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

  /** Every webhook that has had a request, for a scrape. */
  webhooks(): Iterable<WebhookEntry> {
    return this.byWebhook.values();
  }
}
