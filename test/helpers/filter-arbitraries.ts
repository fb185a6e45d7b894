/**
 * The random payload filters and bodies of the property tests (test/core/filter.test.ts and
 * test/runtime/automations/match.test.ts). A small alphabet of keys and values, and bodies that are
 * mostly objects, so that random filters and bodies meet often enough to exercise every rule of
 * docs/filters.md.
 */
import fc from 'fast-check';

export const key = fc.constantFrom('a', 'b', '__proto__', 'a.b');
const scalar = fc.constantFrom<string | number | boolean | null>('x', 'y', '1', 1, 1.5, true, false, null);
const list = fc.array(scalar, { minLength: 1, maxLength: 3 });

/** Any JSON value built from the alphabet above. */
export const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown; object: unknown }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'json' },
    { arbitrary: scalar, weight: 3 },
    { arbitrary: fc.array(tie('value'), { maxLength: 3 }), weight: 1 },
    { arbitrary: tie('object'), weight: 2 },
  ),
  object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
})).value;

/** A webhook body: mostly an object, sometimes any JSON value. */
export const body = fc.oneof({ arbitrary: fc.dictionary(key, json, { maxKeys: 4 }), weight: 4 }, { arbitrary: json, weight: 1 });

/** A valid-shaped payload filter. */
export const filter: fc.Arbitrary<unknown> = fc.letrec<{ filter: unknown; cond: unknown }>((tie) => ({
  filter: fc.dictionary(key, tie('cond'), { maxKeys: 2 }),
  cond: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'filter' },
    scalar,
    list,
    fc.record({ in: list, not_in: list, exists: fc.boolean() }, { requiredKeys: [] }),
    tie('filter'),
  ),
})).filter;

/** Serialised and parsed back, so `__proto__` keys are own properties as in a real body. */
export const roundTrip = (v: unknown): unknown => JSON.parse(JSON.stringify(v) ?? 'null') as unknown;
