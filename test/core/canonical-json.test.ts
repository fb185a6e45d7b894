import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalCopy, canonicalJson } from '../../core/canonical-json.ts';

/** The definition canonicalJson is written against: JSON.stringify of a deep copy with sorted keys. */
function reference(value: unknown): string {
  const sortDeep = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortDeep);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) {
        const x = (v as Record<string, unknown>)[key];
        if (x !== undefined) Object.defineProperty(out, key, { value: sortDeep(x), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortDeep(value));
}

test('canonicalJson sorts keys, drops undefined members and has no white space', () => {
  assert.equal(canonicalJson({ b: 1, a: [{ d: undefined, c: 'x' }, undefined], é: null, Z: true }), '{"Z":true,"a":[{"c":"x"},null],"b":1,"é":null}');
  // Integer keys come first in numeric order, as JSON.stringify writes any object.
  assert.equal(canonicalJson({ b: 1, 10: 'ten', 9: 'nine', '1a': 2, __proto__x: 3 }), '{"9":"nine","10":"ten","1a":2,"__proto__x":3,"b":1}');
});

const key = fc.oneof(fc.string(), fc.constantFrom('0', '1', '10', '9', '01', '4294967294', '4294967295', '-1', '__proto__', 'toString', 'a', 'b'));
  const value = fc.letrec<{ v: unknown }>((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      fc.constantFrom(null, undefined, true, false, 0, -0, 1.5, Number.NaN, Infinity, 1e21, 'x', '\ud800', '"\\\n'),
      fc.double(),
      fc.string({ unit: 'binary' }),
      fc.array(tie('v')),
      fc.dictionary(key, tie('v')),
    ),
  })).v;

test('canonicalJson writes the same bytes as JSON.stringify of a sorted copy', () => {
  fc.assert(
    fc.property(value, (v) => {
      assert.equal(canonicalJson(v), reference(v));
    }),
    { numRuns: 3000 },
  );
});

test('canonicalCopy is what JSON makes of the value, with its canonical JSON', () => {
  const odd = fc.constantFrom(-0, Number.NaN, -Infinity, () => 1, Symbol('s'), new Date(0), [, 1], { toJSON: 'data' }, new String('ab'));
  // A snapshot is an object: the top level is an array or an object (JSON.parse has nothing to read for undefined).
  const withOdd = fc.oneof(fc.array(fc.oneof(value, odd)), fc.dictionary(key, fc.oneof(value, odd)));
  fc.assert(
    fc.property(withOdd, (v) => {
      const { copy, json } = canonicalCopy(v);
      assert.equal(json, canonicalJson(v));
      assert.deepStrictEqual(copy, JSON.parse(json));
    }),
    { numRuns: 3000 },
  );
});

test('what a toJSON returns is sorted too, and Dates and boxed primitives are written as JSON writes them', () => {
  const cases: [unknown, string][] = [
    [{ a: 1, nested: { toJSON: () => ({ z: 1, y: 2 }) } }, '{"a":1,"nested":{"y":2,"z":1}}'],
    // toJSON gets its member's key, and what it returns is not asked again (its own toJSON is left out).
    [{ k: { toJSON: (key: string) => ({ key, toJSON: () => 'twice' }) } }, '{"k":{"key":"k"}}'],
    [{ when: new Date(0), list: [new Date(1000)] }, '{"list":["1970-01-01T00:00:01.000Z"],"when":"1970-01-01T00:00:00.000Z"}'],
    [[new String('ab'), new Number(1), new Boolean(false)], '["ab",1,false]'],
  ];
  for (const [value, text] of cases) {
    assert.equal(canonicalJson(value), text);
    assert.deepEqual(canonicalCopy(value), { copy: JSON.parse(text), json: text });
  }
});

test('canonicalJson holds what JSON.stringify holds, whatever the value', () => {
  const odd = fc.constantFrom(-0, Number.NaN, -Infinity, () => 1, Symbol('s'), new Date(0), [, 1], { toJSON: 'data' }, new String('ab'), { toJSON: () => ({ b: 1, a: 2 }) });
  const withOdd = fc.oneof(fc.array(fc.oneof(value, odd)), fc.dictionary(key, fc.oneof(value, odd)));
  fc.assert(
    fc.property(withOdd, (v) => {
      // deepStrictEqual does not look at key order: this is the content, compared with JSON's own.
      assert.deepStrictEqual(JSON.parse(canonicalJson(v)), JSON.parse(JSON.stringify(v)));
    }),
    { numRuns: 3000 },
  );
});
