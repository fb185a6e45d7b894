import type { Context } from 'koa';
import { notFound } from '../../core/errors.ts';
import { nextFire, parseSchedule } from '../../core/schedule.ts';
import { iso } from '../clock.ts';
import type { Clock } from '../clock.ts';
import { scheduleId } from '../automations/scheduler.ts';
import type { AutomationRecord } from '../definitions/state.ts';
import { canManageFactory, principalOf, requireScope } from '../http/auth.ts';
import type { Store } from '../store/index.ts';
import type { RouteModule } from './index.ts';

/**
 * The schedule triggers of the automations, in the Oz Agent API's shape (docs/api.md#schedules),
 * scope `manage` for their factory:
 *
 *   GET /api/v1/agent/schedules        {schedules: [...]}, sorted by name
 *   GET /api/v1/agent/schedules/:id    one; the id is `<factory>/<automation>/<name or #index>`, URL-encoded
 *
 * Schedules are definitions: they change through the repo (apply), so Oz's create, update,
 * delete, pause and resume are not served.
 */
export const scheduleRoutes: RouteModule = (router, { store, clock }) => {
  router.get('/api/v1/agent/schedules', requireScope('manage'), (ctx) => {
    const principal = principalOf(ctx);
    const automations = store.defs.listAutomations().filter((a) => canManageFactory(principal, a.factory));
    const items = automations.flatMap((a) => scheduleItems(store, clock, a));
    items.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    ctx.body = { schedules: items };
  });

  // A factory the key may not manage has no schedules it can see: the same 404 as an unknown id.
  router.get('/api/v1/agent/schedules/:id', requireScope('manage'), (ctx: Context) => {
    const id = String(ctx.params.id);
    const principal = principalOf(ctx);
    const factory = id.split('/')[0];
    const item = canManageFactory(principal, factory)
      ? store.defs.listAutomations(factory).flatMap((a) => scheduleItems(store, clock, a)).find((s) => s.id === id)
      : undefined;
    if (!item) throw notFound(`schedule ${id} does not exist; list them with GET /api/v1/agent/schedules`);
    ctx.body = item;
  });
};

export interface ScheduleItem {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  prompt: string;
  created_at: string;
  updated_at: string;
  agent_config: { environment_id: string };
  history: { last_ran: string | null; next_run: string | null };
  scope: { type: 'Team' };
  factory: string;
  automation: string;
}

/**
 * One item per schedule of an automation. `next_run` is the time the scheduler has armed, or for a
 * schedule it has not armed yet the next time after now; null while the automation is disabled.
 * `last_ran` is the newest run the schedule started.
 */
export function scheduleItems(store: Store, clock: Clock, a: AutomationRecord): ScheduleItem[] {
  if (!a.schedules?.length) return [];
  const now = clock.now();
  const recent = store.runs.list({ limit: 100, source: 'SCHEDULE', factory: a.factory, automation: a.name }).runs;
  return a.schedules.map((s, i) => {
    const id = scheduleId(a, s, i);
    let next: string | null = null;
    if (a.enabled) {
      const armed = store.schedules.nextFireAt(id);
      const parsed = parseSchedule(s.cron);
      const computed = 'error' in parsed ? undefined : nextFire(parsed.value, now, now);
      next = armed ?? (computed ? iso(computed) : null);
    }
    const last = recent.find((r) => r.schedule?.schedule_id === id);
    return {
      id,
      name: s.name ?? a.title ?? a.name,
      cron_schedule: s.cron,
      enabled: a.enabled,
      prompt: a.prompt,
      created_at: a.createdAt,
      updated_at: a.updatedAt,
      agent_config: { environment_id: a.environment },
      history: { last_ran: last ? last.created_at : null, next_run: next },
      scope: { type: 'Team' },
      factory: a.factory,
      automation: a.name,
    };
  });
}
