/**
 * The lease service: claims waiting for work, and the lease sweeper (docs/runs.md#workers): in every `serve`, executing or not, every few seconds,
 * ends the runs in progress whose executor stopped renewing its lease: ERROR `worker_lost`,
 * retryable. A claimed run has started, so it is never queued again. The sweep is one conditional
 * UPDATE, so replicas sweeping the same database at once end each run once.
 */

import type { Service, ServiceDeps, ServiceFactory, Services } from '../services.ts';
import { killOrphanGroup } from './process.ts';

/** How often at most; a short lease is swept at a third of it. */
const SWEEP_MS = 5_000;

export class LeaseSweeper implements Service {
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<() => void>();
  private draining = false;

  constructor(private readonly deps: Pick<ServiceDeps, 'store' | 'log' | 'config'> & { services?: Services }) {}

  start(): void {
    const every = Math.min(SWEEP_MS, Math.max(200, Math.floor((this.deps.config.leaseSeconds * 1000) / 3)));
    this.timer = setInterval(() => this.sweep(), every);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.drain();
  }

  /**
   * Stops the periodic sweep only: claims, waits and `sweep()` go on. For tests that drive time
   * with a FakeClock and sweep when they say (a timer firing between their steps would race them).
   */
  pauseTimer(): void {
    clearInterval(this.timer);
  }

  /** Ends every wait at once: the server is stopping. */
  drain(): void {
    this.draining = true;
    this.wake();
  }

  /** Ends the current waits (a run was queued). */
  wake(): void {
    for (const w of this.waiters) w();
    this.waiters.clear();
  }

  /** How many claims are waiting now. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Resolves after `ms`, or sooner when woken, when `signal` aborts, or when the server drains
   * (then `false`: do not wait again).
   */
  wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.draining) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve(!this.draining && !signal?.aborted);
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done);
      this.waiters.add(done);
    });
  }

  /** One sweep; the runs it ended. */
  sweep(): string[] {
    try {
      // This process's own pool renews first: after the process was paused (a laptop asleep, a
      // stopped VM) its runs' leases look expired although their executor is alive and here.
      this.deps.services?.executor?.heartbeat();
      // This machine's clock is far from the database's (runtime/clock-check.ts): its "now" would
      // end other replicas' runs whose leases are live. The other replicas sweep meanwhile.
      if (this.deps.services?.clock?.skewed) return [];
      const groups = new Map<string, number[]>();
      const ended = this.deps.store.leases.sweep(groups);
      if (ended.length) this.deps.log.warn({ runs: ended }, 'runs whose executor stopped renewing its lease are now ERROR (worker_lost)');
      // Their processes, where they ran on this machine (a replica of the same database that
      // crashed and was not restarted before the lease ran out): killOrphanGroup kills a group
      // only once its processes are verified to be the run's.
      for (const [runId, pgids] of groups) {
        if (!ended.includes(runId)) continue;
        for (const pgid of pgids) {
          if (killOrphanGroup(pgid, runId) === 'killed') this.deps.log.warn({ runId, pgid }, 'killed a process group left running by the run\'s lost executor');
        }
      }
      return ended;
    } catch (err) {
      this.deps.log.warn({ err }, 'the lease sweep failed; the next one tries again');
      return [];
    }
  }
}

/** The services whose wake is already due after the current turn. */
const wakeDue = new WeakSet<Services>();

/**
 * Runs were queued (an API create, a webhook, a schedule, a replay or a retry): after the current
 * turn, so the caller's commit and answer come first, the local pool claims them and the worker
 * claims waiting on the lease service answer at once (docs/runs.md#workers). One wake per turn,
 * however many runs were queued in it: a group commit of 50 matching deliveries wakes the pool
 * once, and its claims take the oldest runs first.
 */
export function runsQueued(services: Services): void {
  if (wakeDue.has(services)) return;
  wakeDue.add(services);
  setImmediate(() => {
    wakeDue.delete(services);
    services.executor?.wake();
    services.leases?.wake();
  });
}

declare module '../services.ts' {
  interface Services {
    leases?: LeaseSweeper;
  }
}

export const leaseSweeperService: ServiceFactory = {
  name: 'leases',
  create: (deps) => new LeaseSweeper(deps),
};
