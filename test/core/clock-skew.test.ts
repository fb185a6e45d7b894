import { test } from 'node:test';
import assert from 'node:assert/strict';
import { beyond, describeSkew, MAX_SKEW_MS, skewLimitMs, skewOf } from '../../core/clock-skew.ts';

test('the skew is read from the tightest reading: the middle of its round trip against the database clock', () => {
  const skew = skewOf([
    { before: 1000, database: 500, after: 1400 }, // a round trip of 400 ms
    { before: 2000, database: 1990, after: 2020 }, // 20 ms: taken
    { before: 3000, database: 2000, after: 3100 },
  ]);
  assert.deepEqual(skew, { skewMs: 20, uncertaintyMs: 10 });
  assert.throws(() => skewOf([]), /at least one reading/);
});

test('clocks are too far apart only when they surely are: past the limit by more than the uncertainty', () => {
  assert.equal(beyond({ skewMs: 5001, uncertaintyMs: 0 }, 5000), true);
  assert.equal(beyond({ skewMs: -5001, uncertaintyMs: 0 }, 5000), true);
  assert.equal(beyond({ skewMs: 5000, uncertaintyMs: 0 }, 5000), false);
  // 5.5 s, give or take a second: it may be 4.5 s.
  assert.equal(beyond({ skewMs: 5500, uncertaintyMs: 1000 }, 5000), false);
  assert.equal(beyond({ skewMs: -7000, uncertaintyMs: 1000 }, 5000), true);
});

test('the limit is a third of a lease, at most 5 s', () => {
  assert.equal(skewLimitMs(30), MAX_SKEW_MS);
  assert.equal(skewLimitMs(3), 1000);
  assert.equal(skewLimitMs(6), 2000);
  assert.equal(skewLimitMs(3600), MAX_SKEW_MS);
});

test('a skew in words', () => {
  assert.equal(describeSkew(42_300), '42.3 s ahead of');
  assert.equal(describeSkew(-800), '0.8 s behind');
  assert.equal(describeSkew(-3_600_000), '3600 s behind');
});
