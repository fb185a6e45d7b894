import type { StoreContext } from './index.ts';

/** A window's counts after one request was counted (docs/ingress.md#rate-limits). */
export interface WindowCounts {
  startMs: number;
  deliveries: number;
  failedAuth: number;
}

/**
 * Rate-limit windows shared by every replica on one database (docs/deploy.md#several-replicas).
 * Each call is one statement, atomic on its own: the row is reset when its window is over (by the
 * rule of ingress/rate-limit.ts `windowOver`), then counted, and the counts after that are returned,
 * so two replicas counting the same sender at once both see the other's request.
 */
export class RateWindowStore {
  private readonly stmts;

  constructor(ctx: StoreContext) {
    const db = ctx.db;
    // `stale`: this row's window is over, or starts more than a window after `now` (a clock moved
    // back that far). A start a few milliseconds ahead is another replica's clock: the same window.
    const stale = '(@now >= rate_windows.start_ms + @windowMs OR @now < rate_windows.start_ms - @windowMs)';
    this.stmts = {
      delivery: db.prepare(`INSERT INTO rate_windows (key, start_ms, deliveries, failed_auth) VALUES (@key, @now, 1, 0)
        ON CONFLICT (key) DO UPDATE SET
          start_ms = CASE WHEN ${stale} THEN @now ELSE rate_windows.start_ms END,
          failed_auth = CASE WHEN ${stale} THEN 0 ELSE rate_windows.failed_auth END,
          deliveries = CASE WHEN ${stale} THEN 1
                            WHEN rate_windows.failed_auth >= @maxFailedAuth THEN rate_windows.deliveries
                            ELSE rate_windows.deliveries + 1 END
        RETURNING start_ms AS "startMs", deliveries, failed_auth AS "failedAuth"`),
      failedAuth: db.prepare(`INSERT INTO rate_windows (key, start_ms, deliveries, failed_auth) VALUES (@key, @now, 0, 1)
        ON CONFLICT (key) DO UPDATE SET
          start_ms = CASE WHEN ${stale} THEN @now ELSE rate_windows.start_ms END,
          deliveries = CASE WHEN ${stale} THEN 0 ELSE rate_windows.deliveries END,
          failed_auth = CASE WHEN ${stale} THEN 1 ELSE rate_windows.failed_auth + 1 END
        RETURNING start_ms AS "startMs", deliveries, failed_auth AS "failedAuth"`),
      sweep: db.prepare('DELETE FROM rate_windows WHERE start_ms < @before OR start_ms > @after'),
    };
  }

  /**
   * Counts one request against the delivery budget, unless the failed-authentication budget is
   * already spent (then nothing is counted). Requests over the budget are counted too, which changes
   * no decision: the window stays over budget until it passes.
   */
  countDelivery(key: string, nowMs: number, windowMs: number, maxFailedAuth: number): WindowCounts {
    return this.stmts.delivery.get({ key, now: nowMs, windowMs, maxFailedAuth }) as WindowCounts;
  }

  /** Counts one failed authentication. */
  countFailedAuth(key: string, nowMs: number, windowMs: number): WindowCounts {
    return this.stmts.failedAuth.get({ key, now: nowMs, windowMs }) as WindowCounts;
  }

  /** Removes windows that ended before `beforeMs` or start after `afterMs` (a clock that moved back); returns how many. */
  sweep(beforeMs: number, afterMs: number): number {
    return this.stmts.sweep.run({ before: beforeMs, after: afterMs }).changes;
  }
}
