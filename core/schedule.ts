import { Cron } from 'croner';

/**
 * Schedules of `schedule`/`cron_fired` triggers (docs/definitions.md#schedules), pure: five cron
 * fields, a descriptor such as @daily, or `@every <duration>`, always UTC. The compiler checks
 * them with parseSchedule; a scheduler computes the next time from the same parse.
 */

export type ParsedSchedule = { kind: 'cron'; cron: Cron } | { kind: 'every'; ms: number };

/** Descriptors croner reads as cron patterns. */
export const SCHEDULE_DESCRIPTORS = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'] as const;

/** `@every` intervals are at least a minute: a schedule is for work, not for polling. */
export const MIN_EVERY_MS = 60_000;
/** And at most 366 days: rarer work is a cron schedule (`@yearly`), and every fire time stays a date. */
export const MAX_EVERY_MS = 366 * 24 * 3_600_000;

/** What each cron field takes, for a value out of range (croner's own message shows it shifted). */
const FIELD_RANGES: Record<string, string> = {
  minute: 'minute takes 0-59',
  hour: 'hour takes 0-23',
  day: 'day of month takes 1-31',
  month: 'month takes 1-12 or JAN-DEC',
  dayOfWeek: 'day of week takes 0-7 or SUN-SAT',
};

const EVERY = /^@every\s+(?=\d)(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** The schedule, or one sentence saying what is wrong with it. */
export function parseSchedule(text: string): { value: ParsedSchedule } | { error: string } {
  const s = text.trim();
  if (s.startsWith('@every')) {
    const m = EVERY.exec(s);
    if (!m) return { error: `'${s}' is not @every <duration> such as @every 1h, @every 30m or @every 1h30m` };
    const ms = ((Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60 + Number(m[3] ?? 0)) * 1000;
    if (ms < MIN_EVERY_MS) return { error: `'${s}' is shorter than a minute; @every takes 1m or more` };
    if (ms > MAX_EVERY_MS) return { error: `'${s}' is longer than 366 days; use a cron schedule such as @yearly for rarer work` };
    return { value: { kind: 'every', ms } };
  }
  if (s.startsWith('@')) {
    if (!(SCHEDULE_DESCRIPTORS as readonly string[]).includes(s)) {
      return { error: `'${s}' is not a descriptor; use one of ${SCHEDULE_DESCRIPTORS.join(', ')} or @every <duration>` };
    }
  } else if (s.split(/\s+/).length !== 5) {
    return { error: `'${s}' has ${s.split(/\s+/).length} fields; a cron schedule has five (minute hour day-of-month month day-of-week), in UTC` };
  }
  let cron: Cron;
  try {
    cron = new Cron(s, { timezone: 'UTC', paused: true });
  } catch (err) {
    const message = (err as Error).message.replace(/^CronPattern: /, '');
    const field = /^Invalid value for (\w+)/.exec(message)?.[1];
    const why = field !== undefined && FIELD_RANGES[field] !== undefined ? `a value is out of range (${FIELD_RANGES[field]})` : message;
    return { error: `'${s}' is not a valid cron schedule: ${why}` };
  }
  // A fixed start keeps this pure; a schedule that fires never does so from any start.
  if (!cron.nextRun(new Date(Date.UTC(2000, 0, 1)))) return { error: `'${s}' never fires (no such date)` };
  return { value: { kind: 'cron', cron } };
}

/** The first time after `after` that a parsed schedule fires; `anchor` starts the @every intervals. */
export function nextFire(schedule: ParsedSchedule, after: Date, anchor: Date): Date | undefined {
  if (schedule.kind === 'every') {
    const n = Math.floor((after.getTime() - anchor.getTime()) / schedule.ms) + 1;
    return new Date(anchor.getTime() + Math.max(n, 1) * schedule.ms);
  }
  return schedule.cron.nextRun(after) ?? undefined;
}

/** What is wrong with one of an automation's schedules: its expression, or a name used before. */
export type ScheduleProblem<K> = { at: K; error: string } | { at: K; name: string; first: K };

/**
 * The rules every automation's schedules follow (docs/definitions.md#schedules), for the compiler
 * and for the runtime's apply check: each expression parses, and no name (or the missing name) is
 * used twice. `at` is the caller's own handle on each one (a trigger index, a schedule).
 */
export function scheduleProblems<K>(schedules: readonly { at: K; cron?: unknown; name?: unknown }[]): ScheduleProblem<K>[] {
  const problems: ScheduleProblem<K>[] = [];
  const names = new Map<string, K>();
  for (const s of schedules) {
    if (typeof s.cron === 'string') {
      const parsed = parseSchedule(s.cron);
      if ('error' in parsed) problems.push({ at: s.at, error: parsed.error });
    }
    const name = typeof s.name === 'string' ? s.name : '';
    const first = names.get(name);
    if (first !== undefined) problems.push({ at: s.at, name, first });
    else names.set(name, s.at);
  }
  return problems;
}
