import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_FILTER_DEPTH } from '../../core/filter.ts';
import { jsonTextDepth, jsonValueDepth, MAX_JSON_DEPTH } from '../../core/json-depth.ts';

test('jsonTextDepth counts objects and arrays, not scalars', () => {
  const cases: [string, number][] = [
    ['1', 0],
    ['"x"', 0],
    ['null', 0],
    ['{}', 1],
    ['[]', 1],
    ['{"a":[1]}', 2],
    ['[[],[[]],[]]', 3],
    ['{"a":{"b":{}},"c":[]}', 3],
    [' \n{ "a" : [ { } ] }\n', 3],
  ];
  for (const [text, depth] of cases) assert.equal(jsonTextDepth(text), depth, text);
});

test('jsonTextDepth ignores brackets inside strings, escaped quotes included', () => {
  assert.equal(jsonTextDepth('"[[[{{{"'), 0);
  assert.equal(jsonTextDepth('{"a[":"]}{"}'), 1);
  assert.equal(jsonTextDepth('["\\"[[["]'), 1, 'an escaped quote does not end the string');
  assert.equal(jsonTextDepth('["\\\\",[[]]]'), 3, 'an escaped backslash does end it before the quote');
  assert.equal(jsonTextDepth('["\\u005b[", []]'), 2);
});

test('jsonTextDepth scans 100,000 levels without recursion and stops early on request', () => {
  const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
  assert.equal(jsonTextDepth(deep), 100_000);
  assert.equal(jsonTextDepth(deep, MAX_JSON_DEPTH), MAX_JSON_DEPTH + 1);
  assert.equal(jsonTextDepth('['.repeat(10)), 10, 'invalid JSON still has a depth');
  assert.equal(jsonTextDepth('"unterminated [[['), 0);
});

test('jsonValueDepth agrees with jsonTextDepth on any JSON value', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
      assert.equal(jsonValueDepth(value), jsonTextDepth(JSON.stringify(value)));
    }),
  );
});

test('jsonValueDepth walks 100,000 levels without recursion', () => {
  const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) as unknown;
  assert.equal(jsonValueDepth(deep), 100_000);
  assert.equal(jsonValueDepth(deep, 10), 11);
});

test('the limit leaves room for a snapshot whose filter nests to the filter limit', () => {
  // body → snapshot → automations[] → automation → triggers[] → trigger → filter: 7 levels, then
  // MAX_FILTER_DEPTH objects of payload filter and the innermost `in` list.
  assert.ok(7 + MAX_FILTER_DEPTH + 1 <= MAX_JSON_DEPTH);
});
