import { nextFire, parseSchedule } from '../../core/schedule.ts';
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

/** The prompt of a scheduled run: the automation's prompt, then when and why it started. */
export function scheduledPrompt(a: Pick<AutomationRecord, 'factory' | 'name' | 'prompt'>, s: ScheduleDef, firedAt: string): string {
  const name = s.name ? `\`${s.name}\` (\`${s.cron}\`, UTC)` : `\`${s.cron}\` (UTC)`;
  return [
    a.prompt.replace(/\s+$/, ''),
    '',
    '---',
    '',
    SCHEDULE_HEADING,
    '',
    `This run was started by the automation \`${a.name}\` of factory \`${a.factory}\` because its schedule ${name} fired at ${firedAt}.`,
    '',
  ].join('\n');
}

/**
 * What is wanted now: one entry per schedule of an enabled automation, with the first fire time
 * after `now`. A schedule that no longer parses (it was validated at compile time) is left out, and
 * so is a paused one: the store then forgets its armed time, so resuming arms it from that moment
 * (docs/definitions.md#pausing-a-schedule).
 */
export function wantedSchedules(
  automations: readonly AutomationRecord[],
  now: Date,
  paused: { has(id: string): boolean } = new Set(),
  armed: ReadonlyMap<string, ArmedSchedule> = new Map(),
): { wanted: WantedSchedule[]; byId: Map<string, { automation: AutomationRecord; schedule: ScheduleDef }> } {
  const wanted: WantedSchedule[] = [];
  const byId = new Map<string, { automation: AutomationRecord; schedule: ScheduleDef }>();
  for (const a of automations) {
    if (!a.enabled || !a.schedules) continue;
    a.schedules.forEach((s, i) => {
      const parsed = parseSchedule(s.cron);
      if ('error' in parsed) return;
      const id = scheduleId(a, s, i);
      if (paused.has(id)) return;
      // An @every counts from when it was armed, not from whenever a pass happened to fire it.
      const was = armed.get(id);
      const anchor = was && was.cron === s.cron && !Number.isNaN(Date.parse(was.next)) ? new Date(was.next) : now;
      const next = nextFire(parsed.value, now, anchor);
      // @every is at most 366 days (core/schedule.ts), so every time here is a date ISO strings hold.
      if (!next) return;
      wanted.push({ id, cron: s.cron, next: iso(next) });
      byId.set(id, { automation: a, schedule: s });
    });
  }
  return { wanted, byId };
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
    const tick = (): RunRecord[] => {
      const now = clock.now();
      let byId = new Map<string, { automation: AutomationRecord; schedule: ScheduleDef }>();
      const firedAt = iso(now);
      const runFor = (w: WantedSchedule): NewRun => {
        const { automation: a, schedule: s } = byId.get(w.id)!;
        return {
          ...automationRunBase(a),
          prompt: scheduledPrompt(a, s, firedAt),
          source: 'SCHEDULE',
          schedule: { schedule_id: w.id, schedule_name: s.name ?? '', cron_schedule: s.cron },
        };
      };
      const want = (armed: ReadonlyMap<string, ArmedSchedule>) => {
        const w = wantedSchedules(store.defs.listAutomations(), now, store.schedules.paused(), armed);
        byId = w.byId;
        return w.wanted;
      };
      const runs = store.schedules.fire(firedAt, want, store.runs, runFor);
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
