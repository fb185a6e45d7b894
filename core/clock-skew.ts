/**
 * How far a replica's clock is from its database's (docs/deploy.md#clocks): judged from readings,
 * each the local clock read just before and just after one read of the database's clock.
 */

/** One reading, in epoch milliseconds. */
export interface ClockReading {
  before: number;
  database: number;
  after: number;
}

/** The local clock minus the database's (positive: ahead), within `uncertaintyMs` either way. */
export interface Skew {
  skewMs: number;
  uncertaintyMs: number;
}

/** The most two clocks may differ: a third of a lease, and never more than 5 seconds. */
export const MAX_SKEW_MS = 5000;

export function skewLimitMs(leaseSeconds: number): number {
  return Math.min(MAX_SKEW_MS, Math.floor((leaseSeconds * 1000) / 3));
}

/**
 * The skew a set of readings shows: the database's clock was read somewhere between `before` and
 * `after`, so the local time it stands for is their middle, give or take half the round trip. The
 * reading with the shortest round trip is the least uncertain, and is taken.
 */
export function skewOf(readings: readonly ClockReading[]): Skew {
  if (readings.length === 0) throw new Error('skewOf needs at least one reading');
  const best = readings.reduce((a, b) => (b.after - b.before < a.after - a.before ? b : a));
  return { skewMs: (best.before + best.after) / 2 - best.database, uncertaintyMs: (best.after - best.before) / 2 };
}

/** True when the clocks surely differ by more than `limitMs`: by more than that plus the reading's uncertainty. */
export function beyond(skew: Skew, limitMs: number): boolean {
  return Math.abs(skew.skewMs) - skew.uncertaintyMs > limitMs;
}

/** "42.3 s ahead of" / "0.8 s behind": how a skew reads in a sentence about the database's clock. */
export function describeSkew(skewMs: number): string {
  const seconds = Math.abs(skewMs) / 1000;
  const amount = seconds >= 100 ? String(Math.round(seconds)) : seconds.toFixed(1);
  return `${amount} s ${skewMs >= 0 ? 'ahead of' : 'behind'}`;
}
