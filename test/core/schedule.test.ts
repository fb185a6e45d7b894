import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_EVERY_MS, nextFire, parseSchedule } from '../../core/schedule.ts';

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
