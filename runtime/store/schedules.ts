import type { StoreContext } from './index.ts';
import { bySchedule, type NewRun, type RunRecord, type RunStore } from './runs.ts';

/** One schedule trigger as the scheduler wants it now, with the next time it would fire after now. */
export interface WantedSchedule {
  /** `<factory>/<automation>/<schedule name, or #index>`. */
  id: string;
  cron: string;
  /** RFC 3339 UTC: the time it is armed for after this pass, after now. */
  next: string;
}

/** The lock replicas take turns under to fire schedules (Store.lockUntilCommit). */
export const SCHEDULES_LOCK = 'factory-schedules';

/** A schedule's armed state: its expression and next fire time, as the table holds them. */
export type ArmedSchedule = Pick<WantedSchedule, 'cron' | 'next'>;

/** Who paused a schedule, and when (RFC 3339 UTC). */
export interface SchedulePause {
  at: string;
  by: string;
}

/**
 * When each schedule fires next (docs/definitions.md#schedules). `fire` reconciles the table with
 * the schedules wanted now and creates the runs of those that are due in the same transaction as
 * moving their next fire time, so a fire starts exactly one run even across a crash or restart.
 */
export class ScheduleStore {
  private readonly ctx: StoreContext;
  private readonly stmts;

  constructor(ctx: StoreContext) {
    this.ctx = ctx;
    const db = ctx.db;
    this.stmts = {
      all: db.prepare('SELECT schedule_id, cron, next_fire_at AS "next" FROM schedule_state'),
      upsert: db.prepare(`INSERT INTO schedule_state (schedule_id, cron, next_fire_at) VALUES (?, ?, ?)
        ON CONFLICT (schedule_id) DO UPDATE SET cron = excluded.cron, next_fire_at = excluded.next_fire_at`),
      nextOf: db.prepare('SELECT next_fire_at FROM schedule_state WHERE schedule_id = ?'),
      remove: db.prepare('DELETE FROM schedule_state WHERE schedule_id = ?'),
      pauses: db.prepare('SELECT schedule_id, paused_at, paused_by FROM schedule_pauses'),
      pause: db.prepare('INSERT INTO schedule_pauses (schedule_id, paused_at, paused_by) VALUES (?, ?, ?) ON CONFLICT (schedule_id) DO NOTHING'),
      unpause: db.prepare('DELETE FROM schedule_pauses WHERE schedule_id = ?'),
      // The newest run the schedule fired, through the runs_by_schedule index (migration 019).
      lastRan: db.prepare(`SELECT created_at FROM runs WHERE ${bySchedule(ctx.dialect)} AND retry_of IS NULL
        ORDER BY created_at DESC, seq DESC LIMIT 1`),
    };
  }

  /**
   * A new schedule, or one whose cron changed, is armed for `next` and does not fire now. A known
   * one whose next fire time is at or before `now` fires once (fires missed while the runtime was
   * down collapse into this one) and is armed for `next`. One armed for later is armed for `next`
   * when that differs (the scheduler re-arms it after the clock went back), and does not fire.
   * Schedules no longer wanted are forgotten.
   * `runFor` is given the time a due schedule was armed for.
   * `want` is asked inside the transaction, after the lock, with the armed state: what it reads
   * (definitions, pauses) is what the replica before committed, so a pause or a disable that
   * committed while this one waited is seen, and an @every keeps counting from its armed time.
   */
  fire(
    now: string,
    want: (armed: ReadonlyMap<string, ArmedSchedule>) => readonly WantedSchedule[],
    runs: RunStore,
    runFor: (w: WantedSchedule, due: string) => NewRun,
  ): RunRecord[] {
    return this.ctx.db.transaction(() => {
      // Replicas on one PostgreSQL database fire in turns, each reading what the one before moved,
      // so a fire starts one run in total and not one per replica (docs/deploy.md#several-replicas).
      this.ctx.lockUntilCommit(SCHEDULES_LOCK);
      const known = new Map((this.stmts.all.all() as (ArmedSchedule & { schedule_id: string })[]).map((r) => [r.schedule_id, r]));
      // Asked before the loop below forgets the rows it has seen.
      const wanted = want(known);
      // Each due schedule with the time it was armed for: the time its run is for.
      const due: [WantedSchedule, string][] = [];
      for (const w of wanted) {
        const row = known.get(w.id);
        known.delete(w.id);
        if (row && row.cron === w.cron && row.next > now) {
          // Armed for later; moved only when the scheduler re-arms it (a clock that went back).
          if (w.next !== row.next) this.stmts.upsert.run(w.id, w.cron, w.next);
          continue;
        }
        if (row && row.cron === w.cron) due.push([w, row.next]);
        this.stmts.upsert.run(w.id, w.cron, w.next);
      }
      for (const id of known.keys()) this.stmts.remove.run(id);
      return due.length ? runs.createInTx(due.map(([w, at]) => runFor(w, at))) : [];
    })();
  }

  /** The paused schedules, by id (docs/definitions.md#pausing-a-schedule). */
  paused(): Map<string, SchedulePause> {
    const rows = this.stmts.pauses.all() as { schedule_id: string; paused_at: string; paused_by: string }[];
    return new Map(rows.map((r) => [r.schedule_id, { at: r.paused_at, by: r.paused_by }]));
  }

  /** Pauses a schedule; pausing a paused one keeps the first pause and answers false. */
  pause(id: string, at: string, by: string): boolean {
    return this.stmts.pause.run(id, at, by).changes > 0;
  }

  /**
   * Resumes a schedule: its pause and its armed time go, so the scheduler arms it again from now
   * as a new schedule and the fires missed while it was paused never start a run. False when it
   * was not paused: then nothing changes.
   */
  resume(id: string): boolean {
    return this.ctx.db.transaction(() => {
      if (this.stmts.unpause.run(id).changes === 0) return false;
      this.stmts.remove.run(id);
      return true;
    })();
  }

  /**
   * When the newest run the schedule started was created, or undefined when it started none
   * (docs/api.md#schedules). A retry of such a run carries the schedule too, but was started by
   * whoever retried it, not by the schedule: it does not count.
   */
  lastRan(id: string): string | undefined {
    return (this.stmts.lastRan.get(id) as { created_at: string } | undefined)?.created_at;
  }

  /** The next fire time of a schedule, or undefined when it is not armed. */
  nextFireAt(id: string): string | undefined {
    return (this.stmts.nextOf.get(id) as { next_fire_at: string } | undefined)?.next_fire_at;
  }
}
