import type { Clock } from '../clock.ts';

/**
 * Ingress rate limits (docs/ingress.md#rate-limits), per webhook and sender address:
 * - a delivery budget (default 60 per minute): every request that passes this check counts;
 * - a separate failed-authentication budget (default 20 per minute): once it is spent, every
 *   request from that sender to that webhook is 429, even with the right secret, until the
 *   window passes.
 *
 * Fixed windows: a key's window opens at its first request and lasts 60 seconds; both budgets
 * share it. O(1) memory per active key, cheap enough for a benchmark that raises the limits to
 * millions, at the price of allowing up to twice the budget across a window boundary. That
 * burst is bounded and acceptable for an abuse guard; a sliding log would cost a timestamp per
 * request.
 *
 * RateLimiter counts in memory: right for the single process on SQLite. Replicas sharing a
 * PostgreSQL database use SharedRateLimiter, which counts the same windows in the database
 * (runtime/store/rate-windows.ts), so the budget holds in total (docs/deploy.md#several-replicas).
 */
import type { RateWindowStore } from '../store/rate-windows.ts';

export const RATE_WINDOW_MS = 60_000;

export interface RateLimits {
  deliveriesPerMinute: number;
  failedAuthPerMinute: number;
}

export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number; budget: 'deliveries' | 'failed_auth' };

interface Window {
  start: number;
  deliveries: number;
  failedAuth: number;
}

/**
 * The one decision both limiters make: `deliveries` counts this request too. A spent
 * failed-authentication budget answers first; Retry-After is the rest of the window, at least 1 s.
 */
function decide(startMs: number, deliveries: number, failedAuth: number, now: number, limits: RateLimits): RateDecision {
  const budget = failedAuth >= limits.failedAuthPerMinute ? 'failed_auth' : deliveries > limits.deliveriesPerMinute ? 'deliveries' : undefined;
  if (budget === undefined) return { ok: true };
  // A window may start a little after `now` (another replica's clock, or ours moved back): never
  // more than a window to wait.
  const wait = Math.min(RATE_WINDOW_MS, startMs + RATE_WINDOW_MS - now);
  return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)), budget };
}

/**
 * Whether a window that started at `start` is over at `now`: a whole window has passed, or the
 * clock is more than a whole window before its start (it moved back that far). A start a little
 * after `now` is the same window: replicas' clocks differ by milliseconds, and their statements
 * reach the database in any order (docs/ingress.md#rate-limits).
 */
export function windowOver(start: number, now: number): boolean {
  return now >= start + RATE_WINDOW_MS || now < start - RATE_WINDOW_MS;
}

/** How often stale windows are swept out of the map (clock time). */
const SWEEP_EVERY_MS = RATE_WINDOW_MS;

/** What the pipeline asks of a limiter (steps 3, 4 and 6 of docs/ingress.md). */
export interface Limiter {
  take(webhookUid: string, sender: string): RateDecision;
  failedAuth(webhookUid: string, sender: string): void;
}

export class RateLimiter implements Limiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  constructor(
    private readonly clock: Clock,
    private readonly limits: RateLimits,
  ) {}

  /**
   * Step 3 of the pipeline: answers whether this request may go on, and if so counts it
   * against the delivery budget.
   */
  take(webhookUid: string, sender: string): RateDecision {
    const now = this.clock.now().getTime();
    this.sweep(now);
    const w = this.window(webhookUid, sender, now);
    const decision = decide(w.start, w.deliveries + 1, w.failedAuth, now, this.limits);
    if (decision.ok) w.deliveries += 1;
    return decision;
  }

  /** Counts a failed authentication (a 401 at step 4 or 6). */
  failedAuth(webhookUid: string, sender: string): void {
    const now = this.clock.now().getTime();
    this.window(webhookUid, sender, now).failedAuth += 1;
  }

  /** Number of live windows; for metrics and tests. */
  get size(): number {
    return this.windows.size;
  }

  private window(webhookUid: string, sender: string, now: number): Window {
    const key = `${webhookUid} ${sender}`;
    let w = this.windows.get(key);
    if (!w || windowOver(w.start, now)) {
      w = { start: now, deliveries: 0, failedAuth: 0 };
      this.windows.set(key, w);
    }
    return w;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS && now >= this.lastSweep) return;
    this.lastSweep = now;
    for (const [key, w] of this.windows) {
      if (windowOver(w.start, now)) this.windows.delete(key);
    }
  }
}

/**
 * The same windows and budgets as RateLimiter, counted in the shared database: one atomic
 * statement per request (docs/deploy.md#several-replicas). Stale rows are swept once a window.
 */
export class SharedRateLimiter implements Limiter {
  private lastSweep = 0;

  constructor(
    private readonly clock: Clock,
    private readonly limits: RateLimits,
    private readonly windows: RateWindowStore,
  ) {}

  take(webhookUid: string, sender: string): RateDecision {
    const now = this.clock.now().getTime();
    this.sweep(now);
    const w = this.windows.countDelivery(`${webhookUid} ${sender}`, now, RATE_WINDOW_MS, this.limits.failedAuthPerMinute);
    return decide(w.startMs, w.deliveries, w.failedAuth, now, this.limits);
  }

  failedAuth(webhookUid: string, sender: string): void {
    this.windows.countFailedAuth(`${webhookUid} ${sender}`, this.clock.now().getTime(), RATE_WINDOW_MS);
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS && now >= this.lastSweep) return;
    this.lastSweep = now;
    this.windows.sweep(now - RATE_WINDOW_MS, now + RATE_WINDOW_MS);
  }
}
