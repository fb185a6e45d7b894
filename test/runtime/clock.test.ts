import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock, iso } from '../../runtime/clock.ts';

test('iso formats each date as RFC 3339 UTC with milliseconds, whatever it formatted before', () => {
  const a = new Date('2026-03-01T10:00:00.123Z');
  const b = new Date('2026-03-01T10:00:00.124Z');
  assert.equal(iso(a), '2026-03-01T10:00:00.123Z');
  assert.equal(iso(new Date(a.getTime())), '2026-03-01T10:00:00.123Z');
  assert.equal(iso(b), '2026-03-01T10:00:00.124Z');
  assert.equal(iso(a), '2026-03-01T10:00:00.123Z');
  // A date mutated in place after it was formatted is formatted anew.
  const c = new Date(a.getTime());
  assert.equal(iso(c), '2026-03-01T10:00:00.123Z');
  c.setUTCFullYear(2030);
  assert.equal(iso(c), '2030-03-01T10:00:00.123Z');
  assert.throws(() => iso(new Date(Number.NaN)), RangeError);
  assert.throws(() => iso(new Date(Number.NaN)), RangeError);
});

test('FakeClock moves only when told to', () => {
  const clock = new FakeClock('2026-01-01T00:00:00.000Z');
  assert.equal(iso(clock.now()), '2026-01-01T00:00:00.000Z');
  clock.advance(1500);
  assert.equal(iso(clock.now()), '2026-01-01T00:00:01.500Z');
  clock.set('2026-02-01T00:00:00.000Z');
  assert.equal(iso(clock.now()), '2026-02-01T00:00:00.000Z');
});
