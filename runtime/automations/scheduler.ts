import { dueTimes, nextFire, readSchedule, type DueTimes, type ParsedSchedule } from '../../core/schedule.ts';
import type { ScheduleDef } from '../../core/snapshot.ts';
import { iso } from '../clock.ts';
import { runsQueued } from '../executor/lease-sweeper.ts';
import type { AutomationRecord } from '../definitions/state.ts';
import type { Service, ServiceFactory } from '../services.ts';
import { automationRunBase } from './hook.ts';
import type { NewRun, RunRecord } from '../store/runs.ts';
import type { ArmedSchedule, WantedSchedule } from '../store/schedules.ts';

/**
 * Schedule triggers (docs/definitions.md#schedules): every TICK_MS the scheduler reads the
 * enabled automations' schedules and starts a run for each one that is due. Minute resolution
 * is what cron promises; a run starts within a tick of its time.
 */
export const TICK_MS = 5_000;

/** Marks where the automation's prompt ends and the runtime's note on the schedule begins. */
export const SCHEDULE_HEADING = '## Schedule (added by factory)';

/** The id a schedule is known by: its automation and its name (or its place among the automation's schedules). */
export function scheduleId(a: Pick<AutomationRecord, 'factory' | 'name'>, s: ScheduleDef, index: number): string {
  return `${a.factory}/${a.name}/${s.name ?? `#${index}`}`;
}

/**
 * The prompt of a scheduled run: the automation's prompt, then when and why it started: the time
 * the schedule was due (`dueAt`), and, when times it was due passed while no pass ran (a stopped
 * runtime) and this one run stands for them all, how many there were and until when.
 */
export function scheduledPrompt(
  a: Pick<AutomationRecord, 'factory' | 'name' | 'prompt'>,
  s: ScheduleDef,
  dueAt: string,
  collapsed: DueTimes & { until: string },
): string {
  const name = s.name ? `\`${s.name}\` (\`${s.cron}\`, UTC)` : `\`${s.cron}\` (UTC)`;
  const lines = [
    a.prompt.replace(/\s+$/, ''),
    '',
    '---',
    '',
    SCHEDULE_HEADING,
    '',
    `This run was started by the automation \`${a.name}\` of factory \`${a.factory}\` because its schedule ${name} was due at ${dueAt}.`,
  ];
  if (collapsed.count > 1) {
    const times = collapsed.more ? `more than ${collapsed.count} times` : `${collapsed.count} times`;
    lines.push(
      '',
      `The schedule was due ${times} from ${dueAt} until this run started at ${collapsed.until}, while no scheduler was running. Missed times start one run, not one each: this run stands for all of them.`,
    );
  }
  lines.push('');
  return lines.join('\n');
}

/** A schedule armed again from now because its armed time lay beyond its next time (the clock went back). */
type Rearmed = { id: string; was: string; next: string };

/**
 * The parsed schedules, kept from one pass to the next: a pass reads an expression the first time
 * it meets it, not each schedule every TICK_MS (a cron parse costs a fraction of a millisecond,
 * which thousands of schedules made a second of blocked event loop per pass). Expressions no
 * schedule used in the pass before are forgotten. Within a pass, the next time after now of a cron
 * expression, and how many times it was due since a given time, are searched once, whatever the
 * number of schedules that share it.
 */
export class ScheduleCache {
  private kept = new Map<string, ParsedSchedule | null>();
  private used = new Map<string, ParsedSchedule | null>();
  private readonly nextOf = new Map<string, Date | null>();
  private readonly dueOf = new Map<string, DueTimes>();
  private now = new Date(0);

  /** Starts a pass at `now`. */
  pass(now: Date): void {
    this.kept = this.used;
    this.used = new Map();
    this.nextOf.clear();
    this.dueOf.clear();
    this.now = now;
  }

  /** The schedule of an expression, or undefined when it does not read (apply checked it; nothing fires). */
  parse(cron: string): ParsedSchedule | undefined {
    let parsed = this.used.get(cron);
    if (parsed === undefined) {
      if (this.kept.has(cron)) parsed = this.kept.get(cron)!;
      else {
        const read = readSchedule(cron);
        parsed = 'value' in read ? read.value : null;
      }
      this.used.set(cron, parsed);
    }
    return parsed ?? undefined;
  }

  /** How many times a schedule armed for `dueAt` was due by the pass's now; counted once per cron expression and time. */
  due(cron: string, parsed: ParsedSchedule, dueAt: Date): DueTimes {
    if (parsed.kind === 'every') return dueTimes(parsed, dueAt, this.now);
    const key = `${cron}\n${dueAt.toISOString()}`;
    let due = this.dueOf.get(key);
    if (!due) {
      due = dueTimes(parsed, dueAt, this.now);
      this.dueOf.set(key, due);
    }
    return due;
  }

  /** The first fire time after the pass's now; `anchor` starts an @every's intervals. */
  next(cron: string, parsed: ParsedSchedule, anchor: Date): Date | undefined {
    if (parsed.kind === 'every') return nextFire(parsed, this.now, anchor);
    let next = this.nextOf.get(cron);
    if (next === undefined) {
      next = nextFire(parsed, this.now, this.now) ?? null;
      this.nextOf.set(cron, next);
    }
    return next ?? undefined;
  }
}

/**
 * What is wanted now: one entry per schedule of an enabled automation, with the time it is armed
 * for after this pass. A schedule that no longer reads (it was validated at compile time) is left
 * out, and so is a paused one: the store then forgets its armed time, so resuming arms it from that
 * moment (docs/definitions.md#pausing-a-schedule). Only a schedule that is new, changed or due gets
 * a next time computed; one armed for later keeps its armed time, except with `checkClock` (the
 * first pass of a runtime, and one whose clock is behind the pass before): then an armed time later
 * than the schedule's next time from now, which only a clock that went back can have made, is
 * armed again from now and listed in `rearmed`.
 */
export function wantedSchedules(
  automations: readonly AutomationRecord[],
  now: Date,
  paused: { has(id: string): boolean } = new Set(),
  armed: ReadonlyMap<string, ArmedSchedule> = new Map(),
  cache: ScheduleCache = new ScheduleCache(),
  checkClock = false,
): { wanted: WantedSchedule[]; byId: Map<string, { automation: AutomationRecord; schedule: ScheduleDef }>; rearmed: Rearmed[] } {
  const wanted: WantedSchedule[] = [];
  const rearmed: Rearmed[] = [];
  const byId = new Map<string, { automation: AutomationRecord; schedule: ScheduleDef }>();
  const nowIso = iso(now);
  cache.pass(now);
  for (const a of automations) {
    if (!a.enabled || !a.schedules) continue;
    a.schedules.forEach((s, i) => {
      const parsed = cache.parse(s.cron);
      if (!parsed) return;
      const id = scheduleId(a, s, i);
      if (paused.has(id)) return;
      byId.set(id, { automation: a, schedule: s });
      const was = armed.get(id);
      const same = was !== undefined && was.cron === s.cron;
      // Armed for later (the store compares the same strings): it stays as it is, unless the clock went back.
      if (same && was.next > nowIso) {
        const fresh = checkClock ? cache.next(s.cron, parsed, now) : undefined;
        if (fresh && !(Date.parse(was.next) <= fresh.getTime())) {
          const next = iso(fresh);
          rearmed.push({ id, was: was.next, next });
          wanted.push({ id, cron: s.cron, next });
        } else wanted.push({ id, cron: s.cron, next: was.next });
        return;
      }
      // An @every counts from when it was armed, not from whenever a pass happened to fire it.
      const anchor = same && !Number.isNaN(Date.parse(was.next)) ? new Date(was.next) : now;
      const next = cache.next(s.cron, parsed, anchor);
      // @every is at most 366 days (core/schedule.ts), so every time here is a date ISO strings hold.
      if (!next) {
        byId.delete(id);
        return;
      }
      wanted.push({ id, cron: s.cron, next: iso(next) });
    });
  }
  return { wanted, byId, rearmed };
}

export interface Scheduler extends Service {
  /** One pass: arms new schedules and starts the runs of those that are due. Returns them. */
  tick(): RunRecord[];
}

declare module '../services.ts' {
  interface Services {
    scheduler?: Scheduler;
  }
}

export const schedulerService: ServiceFactory = {
  name: 'scheduler',
  create({ store, clock, log, services }): Scheduler {
    let timer: NodeJS.Timeout | undefined;
    const cache = new ScheduleCache();
    // When the last pass ran, by this runtime's clock: a pass behind it follows a clock that went back.
    let lastPass: number | undefined;
    const tick = (): RunRecord[] => {
      const now = clock.now();
      const checkClock = lastPass === undefined || now.getTime() < lastPass;
      let rearmed: Rearmed[] = [];
      let byId = new Map<string, { automation: AutomationRecord; schedule: ScheduleDef }>();
      const firedAt = iso(now);
      const runFor = (w: WantedSchedule, dueAt: string): NewRun => {
        const { automation: a, schedule: s } = byId.get(w.id)!;
        const parsed = cache.parse(s.cron);
        const due = parsed && !Number.isNaN(Date.parse(dueAt)) ? cache.due(s.cron, parsed, new Date(dueAt)) : { count: 1 };
        return {
          ...automationRunBase(a),
          prompt: scheduledPrompt(a, s, dueAt, { ...due, until: firedAt }),
          source: 'SCHEDULE',
          schedule: { schedule_id: w.id, schedule_name: s.name ?? '', cron_schedule: s.cron, scheduled_for: dueAt },
        };
      };
      const want = (armed: ReadonlyMap<string, ArmedSchedule>) => {
        const w = wantedSchedules(store.defs.listAutomations(), now, store.schedules.paused(), armed, cache, checkClock);
        byId = w.byId;
        rearmed = w.rearmed;
        return w.wanted;
      };
      const runs = store.schedules.fire(firedAt, want, store.runs, runFor);
      lastPass = now.getTime();
      for (const r of rearmed) {
        log.warn(
          { schedule: r.id, armed: r.was, next: r.next },
          `schedule ${r.id} was armed for ${r.was}, later than its next time from now: the clock went back; armed again for ${r.next}`,
        );
      }
      for (const r of runs) log.info({ runId: r.run_id, automation: r.automation, schedule: r.schedule?.schedule_id }, 'run created by schedule');
      // The runs are committed; the pool and waiting workers claim them on their own turn.
      if (runs.length) runsQueued(services);
      return runs;
    };
    return {
      tick,
      start() {
        const loop = () => {
          try {
            tick();
          } catch (err) {
            log.error({ err }, 'the scheduler could not start due runs');
          }
          timer = setTimeout(loop, TICK_MS);
          timer.unref();
        };
        loop();
      },
      stop() {
        if (timer) clearTimeout(timer);
        timer = undefined;
      },
    };
  },
};
