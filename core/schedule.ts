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

/** The cron fields in order: the name croner gives each, what we call it, and what it takes. */
const FIELDS = [
  { key: 'minute', name: 'minute', takes: 'minute takes 0-59' },
  { key: 'hour', name: 'hour', takes: 'hour takes 0-23' },
  { key: 'day', name: 'day of month', takes: 'day of month takes 1-31' },
  { key: 'month', name: 'month', takes: 'month takes 1-12 or JAN-DEC' },
  { key: 'dayOfWeek', name: 'day of week', takes: 'day of week takes 0-7 or SUN-SAT' },
] as const;

/** What each cron field takes, for a value out of range (croner's own message shows it shifted). */
const FIELD_RANGES: Record<string, string> = Object.fromEntries(FIELDS.map((f) => [f.key, f.takes]));

/**
 * Why croner refused a five-field expression, in our words (its own messages name fields by
 * number or shifted values): the field at fault, found by trying each one alone, and what is
 * wrong with it.
 */
function cronProblem(s: string, message: string): string {
  const outOfRange = /Invalid value for (\w+)/.exec(message)?.[1];
  if (outOfRange !== undefined && FIELD_RANGES[outOfRange] !== undefined) return `a value is out of range (${FIELD_RANGES[outOfRange]})`;
  const parts = s.split(/\s+/);
  let at = -1;
  for (let i = 0; i < parts.length && at < 0; i++) {
    try {
      new Cron(parts.map((p, j) => (j === i ? p : '*')).join(' '), { timezone: 'UTC', paused: true });
    } catch (err) {
      at = i;
      message = (err as Error).message;
    }
  }
  if (at < 0) return 'each field reads on its own, but together they make no schedule';
  const { name, takes } = FIELDS[at];
  const text = `${name} '${parts[at]}'`;
  const field = /Invalid value for (\w+)/.exec(message)?.[1];
  if (field !== undefined) return `${text} has a value out of range (${takes})`;
  if (/is empty/.test(message)) return `${text} has an empty entry; separate values with single commas`;
  if (/stepping: 0/.test(message)) return `${text} steps by 0; a step (/n) is 1 or more`;
  if (/steps cannot be greater/.test(message)) return `${text} steps by more than the field holds (${takes})`;
  if (/larger than to value/.test(message)) return `${text} has a range that runs backwards; write the lower value first, as in 2-5`;
  if (/nth weekday|nth \(#\)/.test(message)) return `${text}: # takes 1 to 5 or L (the first to fifth, or the last, such weekday of the month), as in 5#2`;
  if (/numeric prefix/.test(message)) return `${text}: a step follows * or a range, as in */15 or 0-30/15, not a single value`;
  if (/\bW\b/.test(message)) return `${text}: W (the nearest weekday) follows a single day of month, as in 15W or LW`;
  if (/\bL\b/.test(message)) return `${text}: L (the last) stands alone or as LW in day of month, and follows a weekday in day of week, as in 5L`;
  return `${text} is not a value, a range (a-b), a list (a,b) or a step (*/n, a-b/n); ${takes}`;
}

const EVERY = /^@every\s+(?=\d)(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/**
 * The schedule, or one sentence saying what is wrong with it: what the compiler and apply check.
 * It also searches for a first fire time, so a cron that never fires (`0 0 31 2 *`) is refused.
 */
export function parseSchedule(text: string): { value: ParsedSchedule } | { error: string } {
  // croner reads a leading '+' in day of week as "day of month AND day of week", which no other
  // cron does (they match either): refused, so a schedule means what it means everywhere.
  const fields = text.trim().split(/\s+/);
  if (fields.length === 5 && fields[4].startsWith('+')) {
    return { error: `'${text.trim()}' is not a valid cron schedule: day of week '${fields[4]}' starts with '+', which is not cron syntax; day of week takes 0-7 or SUN-SAT` };
  }
  const read = readSchedule(text);
  // A fixed start keeps this pure; a schedule that fires never does so from any start.
  if ('value' in read && read.value.kind === 'cron' && !read.value.cron.nextRun(new Date(Date.UTC(2000, 0, 1)))) {
    return { error: `'${text.trim()}' never fires (no such date)` };
  }
  return read;
}

/**
 * The schedule as parseSchedule reads it, without the search for a first fire time: for the
 * scheduler, whose schedules were all checked at apply, and which reads each expression once.
 */
export function readSchedule(text: string): { value: ParsedSchedule } | { error: string } {
  const s = text.trim();
  if (s === '') return { error: 'the schedule is empty; give five cron fields such as 0 9 * * 1-5, a descriptor such as @daily, or @every <duration>' };
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
    const n = s.split(/\s+/).length;
    return { error: `'${s}' has ${n} field${n === 1 ? '' : 's'}; a cron schedule has five (minute hour day-of-month month day-of-week), in UTC` };
  }
  let cron: Cron;
  try {
    cron = new Cron(s, { timezone: 'UTC', paused: true });
  } catch (err) {
    return { error: `'${s}' is not a valid cron schedule: ${cronProblem(s, (err as Error).message)}` };
  }
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

/** A cron schedule's due times are counted up to this many; an @every's are counted exactly. */
export const MAX_COUNTED_DUE_TIMES = 100;

/** How many times a schedule was due, and whether more times were not counted. */
export type DueTimes = { count: number; more?: true };

/**
 * How many times a schedule was due from `first` (a time it was due: its armed time) to `now`,
 * both included, for a run that stands for all of them. `more` says a cron schedule was due more
 * than `count` (MAX_COUNTED_DUE_TIMES) times, which were not all counted.
 */
export function dueTimes(schedule: ParsedSchedule, first: Date, now: Date): DueTimes {
  if (now < first) return { count: 1 };
  if (schedule.kind === 'every') return { count: Math.floor((now.getTime() - first.getTime()) / schedule.ms) + 1 };
  let count = 1;
  for (let t = schedule.cron.nextRun(first); t && t <= now; t = schedule.cron.nextRun(t)) {
    if (count === MAX_COUNTED_DUE_TIMES) return { count, more: true };
    count++;
  }
  return { count };
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
    // An empty expression, or a name that is given but not a string with something in it, breaks
    // the schema, which says so; one diagnostic for one mistake.
    if (typeof s.cron === 'string' && s.cron !== '') {
      const parsed = parseSchedule(s.cron);
      if ('error' in parsed) problems.push({ at: s.at, error: parsed.error });
    }
    if (s.name !== undefined && (typeof s.name !== 'string' || s.name === '')) continue;
    const name = (s.name as string | undefined) ?? '';
    const first = names.get(name);
    if (first !== undefined) problems.push({ at: s.at, name, first });
    else names.set(name, s.at);
  }
  return problems;
}
