import type { Context } from 'koa';
import { notFound } from '../../core/errors.ts';
import { nextFire, readSchedule } from '../../core/schedule.ts';
import { iso } from '../clock.ts';
import type { Clock } from '../clock.ts';
import { scheduleId } from '../automations/scheduler.ts';
import type { AutomationRecord } from '../definitions/state.ts';
import { canManageFactory, principalOf, requireScope } from '../http/auth.ts';
import type { Store } from '../store/index.ts';
import type { SchedulePause } from '../store/schedules.ts';
import type { RouteModule } from './index.ts';
import { noBody } from '../http/body.ts';
import { queryParams } from '../http/query.ts';
import { echoed } from '../../core/text.ts';

/**
 * The schedule triggers of the automations, in the Oz Agent API's shape (docs/api.md#schedules),
 * scope `manage` for their factory:
 *
 *   GET /api/v1/agent/schedules        {schedules: [...]}, sorted by name
 *   GET /api/v1/agent/schedules/:id    one; the id is `<factory>/<automation>/<name or #index>`, URL-encoded
 *   POST /api/v1/agent/schedules/:id/pause | resume   the schedule, paused or running again
 *
 * Schedules are definitions: they change through the repo (apply), so Oz's create, update and
 * delete are not served. Pause and resume are runtime state, like a webhook's enable and disable
 * (docs/definitions.md#pausing-a-schedule).
 */
export const scheduleRoutes: RouteModule = (router, { store, clock, log }) => {
  router.get('/api/v1/agent/schedules', requireScope('manage'), queryParams([]), (ctx) => {
    const principal = principalOf(ctx);
    const automations = store.defs.listAutomations().filter((a) => canManageFactory(principal, a.factory));
    const pauses = store.schedules.paused();
    const items = automations.flatMap((a) => scheduleItems(store, clock, a, pauses));
    items.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    ctx.body = { schedules: items };
  });

  // A factory the key may not manage has no schedules it can see: the same 404 as an unknown id.
  router.get('/api/v1/agent/schedules/:id', requireScope('manage'), (ctx: Context) => {
    ctx.body = findItem(ctx);
  });

  // Paused, a schedule does not fire; pausing a paused one changes nothing.
  router.post('/api/v1/agent/schedules/:id/pause', requireScope('manage'), noBody, (ctx: Context) => {
    const item = findItem(ctx);
    if (store.schedules.pause(item.id, iso(clock.now()), principalOf(ctx).name)) {
      // The id is a known schedule's (findItem found it), so a name from the definitions, never a token:
      // the dev feed prints it, where the request line shows the path redacted.
      log.info({ schedule: item.id, key: principalOf(ctx).name }, `schedule ${item.id} paused by ${principalOf(ctx).name}`);
    }
    ctx.body = findItem(ctx);
  });

  // Resumed, it is armed again from now: the fires it missed while paused are skipped. Resuming
  // one that is not paused changes nothing (its armed time stays).
  router.post('/api/v1/agent/schedules/:id/resume', requireScope('manage'), noBody, (ctx: Context) => {
    const item = findItem(ctx);
    if (store.schedules.resume(item.id)) log.info({ schedule: item.id, key: principalOf(ctx).name }, `schedule ${item.id} resumed by ${principalOf(ctx).name}`);
    ctx.body = findItem(ctx);
  });

  /** The schedule of the path, or the same 404 for an unknown id and one of a factory the key may not manage. */
  function findItem(ctx: Context): ScheduleItem {
    const id = String(ctx.params.id);
    // `<factory>/<automation>/...`: names hold no `/`, so only that automation's items are built.
    const [factory, automation] = id.split('/');
    const item = canManageFactory(principalOf(ctx), factory)
      ? store.defs.listAutomations(factory).filter((a) => a.name === automation).flatMap((a) => scheduleItems(store, clock, a)).find((s) => s.id === id)
      : undefined;
    if (!item) throw notFound(`schedule ${echoed(id)} does not exist; list them with GET /api/v1/agent/schedules`);
    return item;
  }
};

export interface ScheduleItem {
  id: string;
  name: string;
  cron_schedule: string;
  enabled: boolean;
  /** This runtime's own: who paused the schedule and when, or null. */
  paused: { at: string; by: string } | null;
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
 * schedule it has not armed yet the next time after now; null while the automation is disabled or
 * the schedule paused. `enabled` is false in both cases, as Oz's pause sets it false.
 * `last_ran` is the newest run the schedule started (not a retry of one), one indexed query each.
 */
function scheduleItems(store: Store, clock: Clock, a: AutomationRecord, pauses: Map<string, SchedulePause> = store.schedules.paused()): ScheduleItem[] {
  if (!a.schedules?.length) return [];
  const now = clock.now();
  return a.schedules.map((s, i) => {
    const id = scheduleId(a, s, i);
    const paused = pauses.get(id) ?? null;
    let next: string | null = null;
    if (a.enabled && !paused) {
      next = store.schedules.nextFireAt(id) ?? null;
      if (next === null) {
        const parsed = readSchedule(s.cron);
        const computed = 'error' in parsed ? undefined : nextFire(parsed.value, now, now);
        next = computed ? iso(computed) : null;
      }
    }
    const last = store.schedules.lastRan(id) ?? null;
    return {
      id,
      name: s.name ?? a.title ?? a.name,
      cron_schedule: s.cron,
      enabled: a.enabled && !paused,
      paused,
      prompt: a.prompt,
      created_at: a.createdAt,
      updated_at: a.updatedAt,
      agent_config: { environment_id: a.environment },
      history: { last_ran: last, next_run: next },
      scope: { type: 'Team' },
      factory: a.factory,
      automation: a.name,
    };
  });
}
