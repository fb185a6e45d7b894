import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_COUNTED_DUE_TIMES, MAX_EVERY_MS, dueTimes, nextFire, parseSchedule } from '../../core/schedule.ts';

const error = (text: string) => {
  const parsed = parseSchedule(text);
  return 'error' in parsed ? parsed.error : undefined;
};

test('@every takes 1m to 366 days; longer is one sentence pointing at cron', () => {
  assert.equal(error('@every 8784h'), undefined);
  assert.equal(MAX_EVERY_MS, 8784 * 3_600_000);
  assert.equal(error('@every 8784h1m'), "'@every 8784h1m' is longer than 366 days; use a cron schedule such as @yearly for rarer work");
  assert.equal(error('@every 3000000000h'), "'@every 3000000000h' is longer than 366 days; use a cron schedule such as @yearly for rarer work");
  assert.match(error('@every 59s')!, /shorter than a minute/);
});

test('a value out of range names the field and what it takes, never a shifted number', () => {
  assert.equal(error('0 0 * 13 *'), "'0 0 * 13 *' is not a valid cron schedule: a value is out of range (month takes 1-12 or JAN-DEC)");
  assert.equal(error('0 0 0 * *'), "'0 0 0 * *' is not a valid cron schedule: a value is out of range (day of month takes 1-31)");
  assert.equal(error('60 * * * *'), "'60 * * * *' is not a valid cron schedule: a value is out of range (minute takes 0-59)");
  assert.equal(error('0 24 * * *'), "'0 24 * * *' is not a valid cron schedule: a value is out of range (hour takes 0-23)");
  assert.equal(error('0 0 * * 8'), "'0 0 * * 8' is not a valid cron schedule: a value is out of range (day of week takes 0-7 or SUN-SAT)");
});

test('nextFire counts @every from its anchor', () => {
  const parsed = parseSchedule('@every 1h');
  assert.ok('value' in parsed);
  const anchor = new Date('2026-03-02T09:00:00.000Z');
  assert.equal(nextFire(parsed.value, new Date('2026-03-02T10:25:00.000Z'), anchor)?.toISOString(), '2026-03-02T11:00:00.000Z');
  assert.equal(nextFire(parsed.value, new Date('2026-03-02T09:00:00.000Z'), anchor)?.toISOString(), '2026-03-02T10:00:00.000Z');
});

test('what croner refuses is said in our words: the field at fault, its text, and what it takes', () => {
  const cases: [string, string][] = [
    ['-1 * * * *', "minute '-1' is not a value, a range (a-b), a list (a,b) or a step (*/n, a-b/n); minute takes 0-59"],
    ['a * * * *', "minute 'a' is not a value, a range (a-b), a list (a,b) or a step (*/n, a-b/n); minute takes 0-59"],
    ['0,,5 * * * *', "minute '0,,5' has an empty entry; separate values with single commas"],
    ['0 0 * * 1,', "day of week '1,' has an empty entry; separate values with single commas"],
    ['0 0 * * 5#6', "day of week '5#6': # takes 1 to 5 or L (the first to fifth, or the last, such weekday of the month), as in 5#2"],
    ['*/61 * * * *', "minute '*/61' steps by more than the field holds (minute takes 0-59)"],
    ['*/0 * * * *', "minute '*/0' steps by 0; a step (/n) is 1 or more"],
    ['0 5-2 * * *', "hour '5-2' has a range that runs backwards; write the lower value first, as in 2-5"],
    ['5/2 * * * *', "minute '5/2': a step follows * or a range, as in */15 or 0-30/15, not a single value"],
    ['0 0 5W-10 * *', "day of month '5W-10': W (the nearest weekday) follows a single day of month, as in 15W or LW"],
    ['0 0 L-2 * *', "day of month 'L-2': L (the last) stands alone or as LW in day of month, and follows a weekday in day of week, as in 5L"],
    ['0 0 * JAN-FOO *', "month 'JAN-FOO' is not a value, a range (a-b), a list (a,b) or a step (*/n, a-b/n); month takes 1-12 or JAN-DEC"],
    // croner alone reads '+' as "day of month AND day of week": not cron syntax anywhere else.
    ['0 0 1 * +MON', "day of week '+MON' starts with '+', which is not cron syntax; day of week takes 0-7 or SUN-SAT"],
  ];
  for (const [cron, why] of cases) assert.equal(error(cron), `'${cron}' is not a valid cron schedule: ${why}`, cron);
});

test('a blank expression is one sentence, and one field is not "1 fields"', () => {
  assert.equal(error('  '), 'the schedule is empty; give five cron fields such as 0 9 * * 1-5, a descriptor such as @daily, or @every <duration>');
  assert.equal(error('hourly'), "'hourly' has 1 field; a cron schedule has five (minute hour day-of-month month day-of-week), in UTC");
});

test('dueTimes counts the times a schedule was due from its armed time to now, both included', () => {
  const read = (text: string) => {
    const parsed = parseSchedule(text);
    assert.ok('value' in parsed);
    return parsed.value;
  };
  const first = new Date('2026-03-02T09:00:00.000Z');
  assert.deepEqual(dueTimes(read('@hourly'), first, new Date('2026-03-02T09:00:04.000Z')), { count: 1 });
  assert.deepEqual(dueTimes(read('@hourly'), first, new Date('2026-03-02T11:00:00.000Z')), { count: 3 });
  assert.deepEqual(dueTimes(read('@every 1h'), first, new Date('2026-03-02T11:59:59.000Z')), { count: 3 });
  // A year of a minutely @every is counted; a cron's count stops at MAX_COUNTED_DUE_TIMES and says there were more.
  assert.deepEqual(dueTimes(read('@every 1m'), first, new Date('2027-03-02T09:00:00.000Z')), { count: 525_601 });
  assert.deepEqual(dueTimes(read('* * * * *'), first, new Date('2027-03-02T09:00:00.000Z')), { count: MAX_COUNTED_DUE_TIMES, more: true });
  assert.deepEqual(dueTimes(read('* * * * *'), first, new Date(first.getTime() + (MAX_COUNTED_DUE_TIMES - 1) * 60_000)), { count: MAX_COUNTED_DUE_TIMES });
});
