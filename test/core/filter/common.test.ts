import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeValue, jsonPreview } from '../../../core/filter/common.ts';

test('jsonPreview is the start of JSON.stringify, for any JSON value', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.integer({ min: 1, max: 200 }), (value, max) => {
      assert.equal(jsonPreview(value, max), JSON.stringify(value).slice(0, max));
    }),
    { numRuns: 500 },
  );
});

test('jsonPreview and describeValue cope with values nested far deeper than the stack', () => {
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = i % 2 ? [deep] : { a: deep };
  assert.throws(() => JSON.stringify(deep), RangeError);
  assert.equal(jsonPreview(deep, 10), '[{"a":[{"a');
  const shown = describeValue(deep);
  assert.equal(shown.length, 60);
  assert.match(shown, /^(\[\{"a":)+\[?\{?"?a?"?:?\[?\.\.\.$/);
});

test('describeValue shortens long strings, arrays and objects to 60 characters', () => {
  assert.equal(describeValue('x'.repeat(1000)), '"' + 'x'.repeat(55) + '..."');
  assert.equal(describeValue(Array.from({ length: 100 }, (_, i) => i)).length, 60);
  assert.ok(describeValue({ long: 'y'.repeat(100) }).endsWith('...}'));
  assert.equal(describeValue({ a: 1 }), '{"a":1}');
  assert.equal(describeValue(undefined), 'nothing');
});
