import { beyond, describeSkew, skewLimitMs, skewOf, type ClockReading, type Skew } from '../core/clock-skew.ts';
import { CliError } from '../core/errors.ts';
import type { Service, ServiceDeps } from './services.ts';

/** How often a running replica reads the clocks again. */
const CHECK_EVERY_MS = 60_000;
/** Readings per check: the one with the shortest round trip is taken. */
const READINGS = 3;

/**
 * The clock check of replicas on PostgreSQL (docs/deploy.md#clocks). Each replica writes times
 * read from its own clock that the others compare with theirs: a run's lease runs out at a time its
 * holder wrote, and another replica's sweep ends the run when its own clock passes that time; a
 * rate window starts at the time of the replica that opened it. So a replica whose clock is far
 * from the others' ends their runs as lost, or keeps its own alive past their end.
 *
 * At start (`verify`, before the runtime writes anything), the machine's clock is compared with
 * the database server's (three readings, the tightest taken); more than `skewLimitMs` apart (a
 * third of a lease, at most 5 s), `serve` refuses to start, in one sentence. While it runs, the check is made again every minute: past the limit,
 * an error is logged and this replica's lease sweep holds off (`skewed`) until the clocks agree
 * again, which is logged too. The database's clock is the reference because it is the one clock
 * every replica reads; any two replicas within the limit of it are within twice the limit of each
 * other.
 *
 * `now` is the machine's clock (`Date.now`), not the runtime's injected Clock: what is checked is
 * the clock the machine gives the runtime, and tests that drive the runtime's time with a fake
 * clock on PostgreSQL are not a machine whose clock is wrong.
 */
export class ClockCheck implements Service {
  /** True while the last check found the clocks further apart than the limit. */
  skewed = false;
  /** The last skew measured, for the log and tests. */
  last: Skew | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly limitMs: number;

  constructor(
    private readonly deps: Pick<ServiceDeps, 'store' | 'log' | 'config'>,
    private readonly now: () => number = Date.now,
  ) {
    this.limitMs = skewLimitMs(deps.config.leaseSeconds);
  }

  /** Reads both clocks `READINGS` times; the skew of the tightest reading. */
  measure(): Skew | undefined {
    const readings: ClockReading[] = [];
    for (let i = 0; i < READINGS; i++) {
      const before = this.now();
      const database = this.deps.store.databaseTimeMs();
      if (database === undefined) return undefined;
      readings.push({ before, database, after: this.now() });
    }
    return (this.last = skewOf(readings));
  }

  /**
   * The check at start (server.ts, right after the store opens, before anything is written): a
   * CliError when the clocks are too far apart.
   */
  verify(): void {
    const skew = this.measure();
    if (skew === undefined) return;
    if (beyond(skew, this.limitMs)) {
      throw new CliError(
        `this machine's clock is ${describeSkew(skew.skewMs)} the clock of PostgreSQL at ${this.deps.store.location}, more than the ${this.limitMs / 1000} s replicas may differ by (they compare the times each of them writes, such as when a run's lease runs out); set the clock right (NTP) and start again.`,
      );
    }
    this.deps.log.info({ skewMs: Math.round(skew.skewMs), uncertaintyMs: Math.round(skew.uncertaintyMs) }, 'this machine\'s clock agrees with the database\'s');
  }

  /** The checks while the replica runs, every minute (`verify` measured the first). */
  start(): void {
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
    this.timer.unref();
  }

  /** One check of a running replica: logs when the clocks move past the limit, and when they are back. */
  check(): void {
    let skew: Skew | undefined;
    try {
      skew = this.measure();
    } catch (err) {
      // The database is unreachable: /readyz says so; the next check tries again.
      this.deps.log.warn({ err }, 'the clock check could not read the database\'s clock');
      return;
    }
    if (skew === undefined) return;
    const far = beyond(skew, this.limitMs);
    if (far && !this.skewed) {
      this.deps.log.error(
        { skewMs: Math.round(skew.skewMs), limitMs: this.limitMs },
        `this machine's clock is ${describeSkew(skew.skewMs)} the database's: this replica's lease sweep holds off until the clocks agree again; set the clock right (NTP)`,
      );
    } else if (!far && this.skewed) {
      this.deps.log.info({ skewMs: Math.round(skew.skewMs) }, 'this machine\'s clock agrees with the database\'s again: the lease sweep goes on');
    }
    this.skewed = far;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

declare module './services.ts' {
  interface Services {
    clock?: ClockCheck;
  }
}
