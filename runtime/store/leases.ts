import type { StoreContext } from './index.ts';
import type { FinalState, FinishInput, RunRecord, RunStore } from './runs.ts';
import { CANCELLED_END } from '../../core/run-state.ts';

/** Who executes a run: a serve process's pool or a remote worker (docs/runs.md#workers). */
export interface LeaseHolder {
  /** Random per process start: a restarted executor never inherits its predecessor's leases. */
  id: string;
  /** For people: `host/pid` of a pool, the worker's --name. */
  name: string;
}

/** The holder's runs whose lease it still holds, each with whether a cancel was asked of it. */
export interface HeldRun {
  runId: string;
  cancel: boolean;
}

/** The channel a cancel of a run executed elsewhere is told on (docs/runs.md#workers); the payload is the run id. */
export const CANCEL_CHANNEL = 'factory_run_cancel';

/** Why a write of a holder was refused: it no longer holds the run's lease. */
export const LEASE_LOST = 'lease_lost' as const;

export const WORKER_LOST_MESSAGE = 'the executor of the run stopped renewing its lease (it crashed, or lost its connection to the runtime)';
export const OVERDUE_MESSAGE = 'the run went past the time its environment allows (its timeouts, step by step) and its executor did not end it';

/**
 * How long a holder may go on renewing its lease after a cancel was asked of it: time enough to
 * stop the run's processes and finish. After that its lease runs out and the sweep ends the run
 * CANCELLED, whatever the holder does (docs/runs.md#workers).
 */
export const CANCEL_GRACE_MS = 60_000;

/**
 * Most transcript bytes (each event's JSON plus 64 for its row) a lease holder's reports may store
 * for one run. A run executed here stays under about 3 MB by the executor's own caps; the runtime
 * cannot rely on a remote worker applying them, so it applies this one: past it, one marker event
 * says so and further events are dropped (docs/runs.md#workers).
 */
export const REPORTED_BYTES_CAP = 8 * 1024 * 1024;
const EVENT_ROW_BYTES = 64;

/** How a cancel ends a run (the cancel route and a holder's finish after it say the same). */
export const CANCELLED_INPUT: Readonly<FinishInput> = { ...CANCELLED_END, retryable: false };

/**
 * Leases on runs in progress (docs/runs.md#workers). A claim gives the claimer the run's lease for
 * `leaseMs`; heartbeats, events and the finish of the holder renew it; anything from a holder whose
 * lease expired or was taken is refused. Every check is one conditional UPDATE of the run's row,
 * so a sweeper ending the run and its holder renewing it cannot both win, on either engine.
 * Only the holder's id is compared; its name is kept beside it so a run can be traced to a process.
 */
export class LeaseStore {
  private readonly ctx: StoreContext;
  private readonly runs: RunStore;
  private readonly stmts;

  constructor(ctx: StoreContext, runs: RunStore) {
    this.ctx = ctx;
    this.runs = runs;
    const db = ctx.db;
    // What lets a holder keep a lease: no cancel asked longer ago than the grace (ISO 8601 UTC
    // compares as text), and the run not past the deadline of a worker's claim.
    const RENEWABLE = '(cancel_requested_at IS NULL OR cancel_requested_at >= @cancelCutoff) AND (lease_deadline_ms IS NULL OR lease_deadline_ms >= @now)';
    this.stmts = {
      take: db.prepare(`UPDATE runs SET lease_holder = @holder, lease_name = @name, lease_until_ms = @until, cancel_requested_at = NULL, lease_deadline_ms = NULL
        WHERE run_id = @run AND state = 'INPROGRESS'`),
      setDeadline: db.prepare(`UPDATE runs SET lease_deadline_ms = @deadline WHERE run_id = @run AND state = 'INPROGRESS' AND lease_holder = @holder`),
      renew: db.prepare(`UPDATE runs SET lease_until_ms = @until
        WHERE run_id = @run AND state = 'INPROGRESS' AND lease_holder = @holder AND lease_until_ms >= @now
          AND ${RENEWABLE}
        RETURNING cancel_requested_at AS "cancelRequestedAt", reported_events AS "reportedEvents", reported_bytes AS "reportedBytes"`),
      renewAll: db.prepare(`UPDATE runs SET lease_until_ms = @until
        WHERE lease_holder = @holder AND state = 'INPROGRESS' AND lease_until_ms >= @now
          AND ${RENEWABLE}
        RETURNING run_id AS "runId", cancel_requested_at AS "cancelRequestedAt"`),
      // A run the in-process pool is executing whose lease ran out but that no sweep has ended yet
      // (the whole process was paused: a laptop asleep) is still its own, and taken back.
      reclaim: db.prepare(`UPDATE runs SET lease_until_ms = @until
        WHERE run_id = @run AND state = 'INPROGRESS' AND lease_holder = @holder
          AND ${RENEWABLE}
        RETURNING cancel_requested_at AS "cancelRequestedAt"`),
      setReported: db.prepare(`UPDATE runs SET reported_events = @events, reported_bytes = @bytes WHERE run_id = @run`),
      expire: db.prepare(`UPDATE runs SET lease_holder = NULL
        WHERE state = 'INPROGRESS' AND lease_until_ms < @now
        RETURNING run_id AS "runId", cancel_requested_at AS "cancelRequestedAt", lease_deadline_ms AS "deadlineMs"`),
      // The first cancel's time stands: asking again does not restart the holder's grace.
      requestCancel: db.prepare(`UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, @at)
        WHERE run_id = @run AND state = 'INPROGRESS' AND lease_holder IS NOT NULL AND lease_until_ms >= @now
        RETURNING run_id AS "runId"`),
      expiredInProgress: db.prepare(`SELECT run_id AS "runId" FROM runs
        WHERE state = 'INPROGRESS' AND (lease_until_ms IS NULL OR lease_until_ms < @now) ORDER BY created_at, seq`),
      // A worker's holder id is `<key id>.<worker id>`; a pool's has no dot (base64url).
      notHeldByLiveWorker: db.prepare(`SELECT run_id AS "runId" FROM runs
        WHERE state = 'INPROGRESS' AND NOT (lease_holder IS NOT NULL AND lease_holder LIKE '%.%' AND lease_until_ms >= @now)
        ORDER BY created_at, seq`),
      holderOf: db.prepare(`SELECT lease_holder AS "holder", lease_name AS "name", lease_until_ms AS "until" FROM runs WHERE run_id = ?`),
    };
  }

  private nowMs(): number {
    return this.ctx.clock.now().getTime();
  }

  /**
   * Claims the next QUEUED run (runs.ts `claimNext`; `owners`: only runs of these factories) with its
   * lease, in one transaction; undefined when none is queued.
   */
  claim(holder: LeaseHolder, leaseMs: number, owners?: readonly string[] | null): RunRecord | undefined {
    return this.ctx.db.transaction(() => {
      const run = this.runs.claimNext(owners);
      if (run) this.stmts.take.run({ run: run.run_id, holder: holder.id, name: holder.name, until: this.nowMs() + leaseMs });
      return run;
    })();
  }

  /** The renew statements' parameters at this moment. */
  private renewParams(leaseMs: number) {
    const now = this.nowMs();
    return { now, until: now + leaseMs, cancelCutoff: new Date(now - CANCEL_GRACE_MS).toISOString() };
  }

  /**
   * Holds the holder's run to `limitMs` from now (a remote worker's claim, routes/worker.ts): past
   * it, its lease is no longer renewed, and the sweep ends the run once the lease runs out.
   */
  setDeadline(runId: string, holder: Pick<LeaseHolder, 'id'>, limitMs: number): void {
    this.stmts.setDeadline.run({ run: runId, holder: holder.id, deadline: this.nowMs() + limitMs });
  }

  /** Extends the holder's lease on one run: whether a cancel was asked, or LEASE_LOST. */
  renew(runId: string, holder: Pick<LeaseHolder, 'id'>, leaseMs: number): { cancel: boolean } | typeof LEASE_LOST {
    const row = this.renewRow(runId, holder, leaseMs);
    return row ? { cancel: row.cancelRequestedAt !== null } : LEASE_LOST;
  }

  private renewRow(runId: string, holder: Pick<LeaseHolder, 'id'>, leaseMs: number) {
    return this.stmts.renew.get({ run: runId, holder: holder.id, ...this.renewParams(leaseMs) }) as
      | { cancelRequestedAt: string | null; reportedEvents: number; reportedBytes: number }
      | undefined;
  }

  /**
   * Takes back the lease of a run the holder is executing that ran out but that no sweep has ended
   * (docs/runs.md#workers): whether a cancel was asked, or LEASE_LOST.
   */
  reclaim(runId: string, holder: Pick<LeaseHolder, 'id'>, leaseMs: number): { cancel: boolean } | typeof LEASE_LOST {
    const row = this.stmts.reclaim.get({ run: runId, holder: holder.id, ...this.renewParams(leaseMs) }) as { cancelRequestedAt: string | null } | undefined;
    return row ? { cancel: row.cancelRequestedAt !== null } : LEASE_LOST;
  }

  /** Extends every lease the holder still holds (a pool's heartbeat); the runs it holds. */
  renewAll(holder: Pick<LeaseHolder, 'id'>, leaseMs: number): HeldRun[] {
    const rows = this.stmts.renewAll.all({ holder: holder.id, ...this.renewParams(leaseMs) }) as { runId: string; cancelRequestedAt: string | null }[];
    return rows.map((r) => ({ runId: r.runId, cancel: r.cancelRequestedAt !== null }));
  }

  /**
   * Appends transcript events of the holder, renewing its lease, all or nothing; LEASE_LOST writes
   * none. `firstIndex`, when given, is the index of the batch's first event among all the holder
   * has sent for the run: events the runtime already took (a batch sent again because its answer
   * was lost) are skipped. Past REPORTED_BYTES_CAP one marker is stored and the rest dropped.
   */
  appendEvents(
    runId: string,
    holder: Pick<LeaseHolder, 'id'>,
    leaseMs: number,
    events: readonly { type: string; data: Record<string, unknown> }[],
    firstIndex?: number,
  ): { cancel: boolean } | typeof LEASE_LOST {
    return this.ctx.db.transaction(() => {
      const row = this.renewRow(runId, holder, leaseMs);
      if (!row) return LEASE_LOST;
      const skip = firstIndex === undefined ? 0 : Math.max(0, Number(row.reportedEvents) - firstIndex);
      let bytes = Number(row.reportedBytes);
      for (const e of events.slice(skip)) {
        if (bytes > REPORTED_BYTES_CAP) break;
        // Serialised once: measured here, stored as it is, in this transaction.
        const json = JSON.stringify(e.data);
        const size = Buffer.byteLength(json) + EVENT_ROW_BYTES;
        if (bytes + size <= REPORTED_BYTES_CAP) {
          this.runs.appendEventJsonInTx(runId, e.type, json);
          bytes += size;
        } else {
          const text = `[transcript truncated: the executor reported more than ${REPORTED_BYTES_CAP} bytes of events for this run; the rest were dropped]\n`;
          this.runs.appendEventJsonInTx(runId, 'output', JSON.stringify({ stream: 'stderr', text, truncated: true }));
          bytes = REPORTED_BYTES_CAP + 1;
        }
      }
      const taken = firstIndex === undefined ? Number(row.reportedEvents) + events.length : Math.max(Number(row.reportedEvents), firstIndex + events.length);
      this.stmts.setReported.run({ run: runId, events: taken, bytes });
      return { cancel: row.cancelRequestedAt !== null };
    })();
  }

  /**
   * Ends the holder's run; LEASE_LOST when it no longer holds it (the run was then ended by the
   * sweeper, or cancelled). A run whose cancel was asked ends CANCELLED whatever state the holder
   * reports: the user's cancel stands. The run keeps its last holder's name after it ends.
   */
  finish(runId: string, holder: Pick<LeaseHolder, 'id'>, state: FinalState, input: FinishInput): RunRecord | typeof LEASE_LOST {
    return this.ctx.db.transaction(() => {
      const held = this.renew(runId, holder, 0);
      if (held === LEASE_LOST) return LEASE_LOST;
      const [to, why] = held.cancel ? (['CANCELLED', CANCELLED_INPUT] as const) : ([state, input] as const);
      return this.runs.finish(runId, to, why) ?? LEASE_LOST;
    })();
  }

  /**
   * Ends every run in progress whose lease expired: ERROR worker_lost, retryable, or CANCELLED when a
   * cancel was asked of it (docs/runs.md#workers).
   * Idempotent; replicas may sweep at the same time (the conditional UPDATE picks each run once).
   * `groups`, when given, receives the process groups recorded for each run found expired.
   */
  sweep(groups?: Map<string, number[]>): string[] {
    return this.ctx.db.transaction(() => {
      const now = this.nowMs();
      const rows = this.stmts.expire.all({ now }) as { runId: string; cancelRequestedAt: string | null; deadlineMs: number | string | null }[];
      const ended: string[] = [];
      for (const { runId, cancelRequestedAt, deadlineMs } of rows) {
        // The process groups recorded for it, which finishing forgets: for the caller to end.
        if (groups) groups.set(runId, this.runs.processGroups(runId));
        // A run whose cancel was asked ends as asked, also when its holder never finished it.
        const overdue = deadlineMs !== null && Number(deadlineMs) < now;
        const lost: FinishInput = { statusMessage: overdue ? OVERDUE_MESSAGE : WORKER_LOST_MESSAGE, errorCode: 'worker_lost', retryable: true };
        const [to, why] = cancelRequestedAt !== null ? (['CANCELLED', CANCELLED_INPUT] as const) : (['ERROR', lost] as const);
        if (this.runs.finish(runId, to, why)) ended.push(runId);
      }
      return ended;
    })();
  }

  /**
   * Asks the live holder of an INPROGRESS run to cancel it (docs/runs.md#workers); false when the
   * run has no live holder (nothing would stop it: the caller ends it at once).
   */
  requestCancel(runId: string): boolean {
    const now = this.nowMs();
    return this.stmts.requestCancel.get({ run: runId, now, at: new Date(now).toISOString() }) !== undefined;
  }

  /** Runs in progress without a live lease (a PostgreSQL replica's start-up recovery). */
  expiredInProgressIds(): string[] {
    return (this.stmts.expiredInProgress.all({ now: this.nowMs() }) as { runId: string }[]).map((r) => r.runId);
  }

  /**
   * Runs in progress except those a remote worker holds with a live lease: on SQLite one runtime
   * owns the file, so these were its own (start-up recovery, docs/runs.md#workers).
   */
  notHeldByLiveWorkerIds(): string[] {
    return (this.stmts.notHeldByLiveWorker.all({ now: this.nowMs() }) as { runId: string }[]).map((r) => r.runId);
  }

  /** The run's last holder and lease end, for diagnostics and tests. */
  holderOf(runId: string): { id: string | null; name: string | null; untilMs: number | null } | undefined {
    const row = this.stmts.holderOf.get(runId) as { holder: string | null; name: string | null; until: number | null } | undefined;
    return row ? { id: row.holder, name: row.name, untilMs: row.until } : undefined;
  }
}
