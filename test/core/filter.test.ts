import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkFilter, explainFilter, formatPath, matchFilter, type FilterProblemCode, type PayloadFilter } from '../../core/filter.ts';
import { FILTER_CASES } from './filter-table.ts';
import { body, filter, json, key, roundTrip } from '../helpers/filter-arbitraries.ts';

describe('filter table (docs/filters.md)', () => {
  it('has enough rows, all valid filters with unique names', () => {
    assert.ok(FILTER_CASES.length >= 60);
    assert.equal(new Set(FILTER_CASES.map((c) => c.name)).size, FILTER_CASES.length);
    for (const c of FILTER_CASES) assert.deepEqual(checkFilter(c.filter), [], c.name);
  });

  for (const c of FILTER_CASES) {
    it(c.name, () => {
      const payload: unknown = JSON.parse(c.payload);
      assert.equal(matchFilter(c.filter, payload), c.matches, 'matchFilter');
      const explanation = explainFilter(c.filter, payload);
      assert.equal(explanation.matches, c.matches, 'explainFilter');
      if (!explanation.matches) {
        assert.ok(explanation.reason.length > 0);
        if (c.path) assert.deepEqual(explanation.path, c.path);
      }
    });
  }
});

describe('explainFilter reasons', () => {
  const reason = (filter: PayloadFilter, payload: string) => {
    const e = explainFilter(filter, JSON.parse(payload));
    assert.equal(e.matches, false);
    return e.matches ? '' : e.reason;
  };
  it('says what was expected and what was found', () => {
    assert.equal(reason({ action: ['opened', 'reopened'] }, '{}'), 'missing (expected one of "opened", "reopened")');
    assert.equal(reason({ action: ['opened', 'reopened'] }, '{"action":"closed"}'), '"closed" is not one of "opened", "reopened"');
    assert.equal(reason({ action: 'opened' }, '{"action":"closed"}'), '"closed" is not "opened"');
    assert.equal(reason({ pr: { number: 1 } }, '{"pr":"x"}'), 'is a string, not an object');
    assert.equal(reason({ pr: { number: 1 } }, '{"pr":null}'), 'is null, not an object');
    assert.equal(reason({ pr: { number: 1 } }, '{}'), 'missing (expected an object)');
    assert.equal(reason({ label: { exists: false } }, '{"label":null}'), 'present, but exists: false');
    assert.equal(reason({ label: { exists: true } }, '{}'), 'missing (expected it to exist)');
    assert.equal(reason({ ref: { not_in: ['main'] } }, '{"ref":"main"}'), '"main" is listed in not_in');
    assert.equal(reason({ tags: { not_in: ['wip'] } }, '{"tags":["ui","wip"]}'), 'holds "wip", which is listed in not_in');
    assert.equal(reason({ tags: ['bug'] }, '{"tags":["ui"]}'), 'no element of ["ui"] is "bug"');
    assert.equal(reason({ tags: ['bug'] }, '{"tags":[]}'), 'is an empty array (expected "bug")');
    assert.equal(reason({ a: 'x' }, '{"a":{"x":1}}'), 'is an object, not "x"');
    assert.equal(reason({ items: {} }, '{"items":[]}'), 'is an empty array, not an object');
    assert.equal(reason({ items: { a: 1 } }, '{"items":[1]}'), 'is an array with no object elements, not an object');
    assert.equal(reason({ a: 1 }, '"text"'), 'missing: the body is a string, not an object');
  });
  it('points out strict comparison when the two look alike', () => {
    assert.equal(reason({ n: '1' }, '{"n":1}'), '1 is not "1" (number 1 never equals string "1")');
    assert.equal(reason({ b: true }, '{"b":"true"}'), '"true" is not true (string "true" never equals boolean true)');
  });
  it('names the element shown when several objects fail', () => {
    assert.equal(
      reason({ labels: { name: 'bug' } }, '{"labels":[{"name":"ui"},{"name":"docs"}]}'),
      '"ui" is not "bug" (no element matches; element 0 shown)',
    );
    assert.equal(reason({ labels: { name: 'bug' } }, '{"labels":[1,{"name":"ui"}]}'), '"ui" is not "bug"');
  });
  it('shortens long strings', () => {
    const long = 'x'.repeat(500);
    const r = reason({ body: 'short' }, JSON.stringify({ body: long }));
    assert.equal(r, `"${'x'.repeat(55)}..." is not "short"`);
  });
  it('shortens long lists', () => {
    assert.equal(reason({ n: [1, 2, 3, 4, 5, 6, 7] }, '{"n":0}'), '0 is not one of 1, 2, 3, 4, 5 and 2 more');
  });
});

describe('formatPath', () => {
  it('joins keys with dots and marks array elements', () => {
    assert.equal(formatPath(['pull_request', 'labels', '[]', 'name']), 'pull_request.labels[].name');
    assert.equal(formatPath(['action']), 'action');
    assert.equal(formatPath(['items', '[]', '[]', 'a']), 'items[][].a');
  });
  it('quotes keys with dots or odd characters', () => {
    assert.equal(formatPath(['a.b', 'c']), '"a.b".c');
    assert.equal(formatPath(['x', 'with space', 'q"uote']), 'x."with space"."q\\"uote"');
    assert.equal(formatPath(['']), '""');
    assert.equal(formatPath(['__proto__', 'kebab-key', '0']), '__proto__.kebab-key.0');
  });
});

describe('checkFilter (docs/filters.md#compile-errors)', () => {
  const cases: { name: string; filter: unknown; problems: [string, FilterProblemCode][] }[] = [
    { name: 'an empty filter is valid', filter: {}, problems: [] },
    { name: 'every valid form', filter: { a: 1, b: 'x', c: null, d: true, e: [1, 'x', null, false], f: { in: ['x'], not_in: ['y'], exists: true }, g: { h: { i: { exists: false } } }, j: { not_in: [] } }, problems: [] },
    { name: 'root: an array', filter: [], problems: [['', 'filter.not_object']] },
    { name: 'root: null', filter: null, problems: [['', 'filter.not_object']] },
    { name: 'root: a string', filter: 'action', problems: [['', 'filter.not_object']] },
    { name: 'root: undefined', filter: undefined, problems: [['', 'filter.not_object']] },
    { name: 'operators mixed with a body key', filter: { a: { in: ['x'], b: 1 } }, problems: [['/a/b', 'filter.mixed_operators']] },
    { name: 'exists mixed with a nested key', filter: { pr: { exists: true, number: 2 } }, problems: [['/pr/number', 'filter.mixed_operators']] },
    { name: '$-prefixed key beside an operator', filter: { a: { in: ['x'], $regex: 'y' } }, problems: [['/a/$regex', 'filter.unknown_operator']] },
    { name: '$-prefixed key alone', filter: { a: { $eq: 1 } }, problems: [['/a/$eq', 'filter.unknown_operator']] },
    { name: '$-prefixed key at the root', filter: { $or: [1] }, problems: [['/$or', 'filter.unknown_operator']] },
    { name: 'operator-like key beside an operator', filter: { a: { exists: true, nin: ['x'] } }, problems: [['/a/nin', 'filter.unknown_operator']] },
    { name: 'foreign operator name beside an operator', filter: { a: { in: ['x'], equals: 'y' } }, problems: [['/a/equals', 'filter.unknown_operator']] },
    { name: 'misspelt not_in alone', filter: { a: { notIn: ['x'] } }, problems: [['/a/notIn', 'filter.unknown_operator']] },
    { name: 'misspelt operators alone', filter: { a: { NOT_IN: ['x'], IN: ['y'] } }, problems: [['/a/NOT_IN', 'filter.unknown_operator'], ['/a/IN', 'filter.unknown_operator']] },
    { name: 'misspelt exists alone', filter: { a: { exist: true } }, problems: [['/a/exist', 'filter.unknown_operator']] },
    { name: 'a field named like an operator with a non-operator value is a nested filter', filter: { a: { exist: 'yes', nin: 1 } }, problems: [] },
    { name: 'a field named like a foreign operator is a nested filter', filter: { a: { equals: 'x', type: 'y' } }, problems: [] },
    { name: 'near-miss beside a normal key is a nested filter', filter: { a: { nin: ['x'], name: 'y' } }, problems: [] },
    { name: 'empty in', filter: { a: { in: [] } }, problems: [['/a/in', 'filter.empty_in']] },
    { name: 'empty bare list', filter: { a: [] }, problems: [['/a', 'filter.empty_in']] },
    { name: 'value in both in and not_in', filter: { a: { in: ['x', 1], not_in: ['y', 1] } }, problems: [['/a/not_in/1', 'filter.in_and_not_in']] },
    { name: '1 and 1.0 are the same value in in and not_in', filter: JSON.parse('{"a":{"in":[1],"not_in":[1.0]}}'), problems: [['/a/not_in/0', 'filter.in_and_not_in']] },
    { name: '"1" and 1 are different values in in and not_in', filter: { a: { in: ['1'], not_in: [1] } }, problems: [] },
    { name: 'exists a string', filter: { a: { exists: 'yes' } }, problems: [['/a/exists', 'filter.invalid_exists']] },
    { name: 'exists null', filter: { a: { exists: null } }, problems: [['/a/exists', 'filter.invalid_exists']] },
    { name: 'in a scalar', filter: { a: { in: 'x' } }, problems: [['/a/in', 'filter.invalid_value']] },
    { name: 'not_in an object', filter: { a: { not_in: { x: 1 } } }, problems: [['/a/not_in', 'filter.invalid_value']] },
    { name: 'in with an object item', filter: { a: { in: ['x', { y: 1 }] } }, problems: [['/a/in/1', 'filter.invalid_value']] },
    { name: 'bare list with an array item', filter: { a: ['x', ['y']] }, problems: [['/a/1', 'filter.invalid_value']] },
    { name: 'not_in with an object item', filter: { a: { not_in: [{}] } }, problems: [['/a/not_in/0', 'filter.invalid_value']] },
    { name: 'a non-JSON value', filter: { a: undefined }, problems: [['/a', 'filter.invalid_value']] },
    { name: 'a non-finite number', filter: { a: Number.NaN }, problems: [['/a', 'filter.invalid_value']] },
    { name: 'pointers escape ~ and /', filter: { 'a/b': { 'c~d': { in: [] } } }, problems: [['/a~1b/c~0d/in', 'filter.empty_in']] },
    { name: '__proto__ key is ordinary', filter: JSON.parse('{"__proto__":{"in":[]}}'), problems: [['/__proto__/in', 'filter.empty_in']] },
    { name: 'deep problems are found', filter: { a: { b: { c: { d: { exists: 1 } } } } }, problems: [['/a/b/c/d/exists', 'filter.invalid_exists']] },
    {
      name: 'every problem at once',
      filter: { a: [], b: { in: [], x: 1 }, c: { exists: 0 }, d: { in: [{}], not_in: ['q'] } },
      problems: [
        ['/a', 'filter.empty_in'],
        ['/b/x', 'filter.mixed_operators'],
        ['/b/in', 'filter.empty_in'],
        ['/c/exists', 'filter.invalid_exists'],
        ['/d/in/0', 'filter.invalid_value'],
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const problems = checkFilter(c.filter);
      assert.deepEqual(problems.map((p) => [p.pointer, p.code]), c.problems);
      for (const p of problems) assert.ok(p.message.length > 10, p.message);
    });
  }

  it('refuses nesting deeper than 32 levels', () => {
    let filter: PayloadFilter = { leaf: 1 };
    for (let i = 0; i < 40; i++) filter = { k: filter };
    const problems = checkFilter(filter);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.code, 'filter.invalid_value');
    assert.equal(problems[0]!.pointer, '/k'.repeat(32));
  });

  it('messages quote the input and say what was expected', () => {
    const [exists] = checkFilter({ a: { exists: 'yes' } });
    assert.match(exists!.message, /"yes"/);
    assert.match(exists!.message, /true or false/);
    const [item] = checkFilter({ a: { in: ['x', { y: 1 }] } });
    assert.match(item!.message, /\{"y":1\}/);
    assert.match(item!.message, /scalars/);
    const [typo] = checkFilter({ a: { notIn: ['x'] } });
    assert.match(typo!.message, /did you mean "not_in"/);
  });

  it('refuses what the runtime could not take or compare as written: NUL, unpaired surrogates, integers beyond 2^53', () => {
    const at = (filter: PayloadFilter) => checkFilter(filter).map((p) => [p.code, p.pointer]);
    assert.deepEqual(at({ 'status\0code': 'x' }), [['filter.invalid_value', '/status\u0000code']]);
    assert.deepEqual(at({ a: 'x\0' }), [['filter.invalid_value', '/a']]);
    assert.deepEqual(at({ a: { in: ['ok', '\ud800'] } }), [['filter.invalid_value', '/a/in/1']]);
    assert.deepEqual(at({ id: 9007199254740993 }), [['filter.invalid_value', '/id']]);
    assert.deepEqual(at({ id: [1, 2 ** 60] }), [['filter.invalid_value', '/id/1']]);
    assert.match(checkFilter({ id: 9007199254740993 })[0]!.message, /beyond the integers a number holds exactly/);
    // What stays valid: the largest exact integer, decimals, emoji (a surrogate pair).
    assert.deepEqual(at({ id: 9007199254740991, ratio: 0.5, big: 1e15, face: '🙂', '🙂': true }), []);
  });
});

describe('matchFilter and explainFilter agree (property)', () => {
  it('on valid-shaped filters and random bodies', () => {
    fc.assert(
      fc.property(filter, body, (f, p) => {
        const fl = roundTrip(f) as PayloadFilter;
        const body = roundTrip(p);
        const explanation = explainFilter(fl, body);
        assert.equal(matchFilter(fl, body), explanation.matches);
        if (!explanation.matches) assert.ok(explanation.path.length > 0 && explanation.reason.length > 0);
      }),
      { numRuns: 5000 },
    );
  });

  it('on arbitrary JSON filters, which never throw', () => {
    fc.assert(
      fc.property(fc.dictionary(key, json, { maxKeys: 3 }), body, (f, p) => {
        const fl = roundTrip(f) as PayloadFilter;
        const body = roundTrip(p);
        assert.equal(matchFilter(fl, body), explainFilter(fl, body).matches);
      }),
      { numRuns: 2000 },
    );
  });
});
