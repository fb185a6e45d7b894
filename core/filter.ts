/**
 * Payload filters (SPEC 3): the grammar check the compiler runs, the evaluator the runtime runs
 * on every accepted delivery, and the explanation of a non-match for Test filter (SPEC 8).
 * Pure: no I/O, no clock. The exact rules and decisions are in docs/filters.md.
 */
import type { Json } from './snapshot.ts';

export type PayloadFilter = { [key: string]: Json };

export type FilterProblemCode =
  | 'filter.mixed_operators'
  | 'filter.unknown_operator'
  | 'filter.empty_in'
  | 'filter.in_and_not_in'
  | 'filter.invalid_value'
  | 'filter.invalid_exists'
  | 'filter.not_object';

export interface FilterProblem {
  /** JSON pointer relative to the filter root, e.g. "/action/in/0" (RFC 6901 escaping). */
  pointer: string;
  code: FilterProblemCode;
  message: string;
}

export type Explanation = { matches: true } | { matches: false; path: string[]; reason: string };

/** The operator keys. An object holding any of them is an operator object, not a nested filter. */
export const FILTER_OPERATORS = ['in', 'not_in', 'exists'] as const;

/**
 * The path segment that stands for "an element of this array" in an explanation's path, shown by
 * formatPath as `labels[]`.
 */
export const ARRAY_ELEMENT = '[]';

/** Nesting deeper than this is refused by checkFilter; it also bounds the evaluator's recursion. */
export const MAX_FILTER_DEPTH = 32;

const hasOwn = Object.hasOwn;

function isPlainObject(value: unknown): value is { [key: string]: unknown } {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isScalar(value: unknown): value is null | boolean | number | string {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function isOperatorKey(key: string): boolean {
  return (FILTER_OPERATORS as readonly string[]).includes(key);
}

function hasOperatorKey(obj: { [key: string]: unknown }): boolean {
  return hasOwn(obj, 'in') || hasOwn(obj, 'not_in') || hasOwn(obj, 'exists');
}

// ---------------------------------------------------------------------------------------------
// Grammar check (compile time)
// ---------------------------------------------------------------------------------------------

/**
 * Names that other filter languages use as operators. Next to a real operator such a key is an
 * unknown operator (not a field), since a field and an operator cannot share one object anyway.
 * Compared after lower-casing and dropping `$`, `_`, `-` and spaces.
 */
const FOREIGN_OPERATORS = new Set([
  'in', 'notin', 'nin', 'exists', 'exist', 'eq', 'equal', 'equals', 'ne', 'neq', 'not', 'noteq',
  'notequals', 'gt', 'gte', 'lt', 'lte', 'regex', 'match', 'matches', 'contains', 'oneof',
  'noneof', 'anyof', 'any', 'all', 'startswith', 'endswith', 'prefix', 'suffix', 'missing',
  'present', 'isnull', 'null', 'type', 'size', 'or', 'and', 'nor',
]);

/** Near-misses of our own operators, with the operator they were probably meant to be. */
const NEAR_MISSES: Record<string, 'in' | 'not_in' | 'exists'> = {
  in: 'in',
  notin: 'not_in',
  nin: 'not_in',
  exists: 'exists',
  exist: 'exists',
};

function normalizeOperatorName(key: string): string {
  return key.toLowerCase().replace(/[$_\- ]/g, '');
}

/** RFC 6901 escaping of one reference token. */
function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function pointerOf(path: readonly string[]): string {
  let out = '';
  for (const token of path) out += '/' + escapePointerToken(token);
  return out;
}

/** A short, quoted rendering of a value for messages. */
function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) {
    const text = safeJson(value);
    return text.length <= 60 ? text : text.slice(0, 57) + '...';
  }
  if (isPlainObject(value)) {
    const text = safeJson(value);
    return text.length <= 60 ? text : text.slice(0, 57) + '...}';
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const text = safeJson(value);
  // A long string (a comment body) would drown the message: keep its start.
  return typeof value === 'string' && text.length > 60 ? text.slice(0, 56) + '..."' : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** "a string", "an array", "null", ... for messages. */
function kindOf(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'a boolean';
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** "a string \"x\"", "null", "an array [1]" for messages that quote the input. */
function kindAndValue(value: unknown): string {
  if (value === null || value === undefined) return kindOf(value);
  return `${kindOf(value)} ${describeValue(value)}`;
}

/**
 * Compile-time grammar check of a payload filter (SPEC 3): returns every problem at once, in a
 * stable order, each with a JSON pointer relative to the filter root. An empty list means the
 * filter is valid and `matchFilter` evaluates it as written.
 */
export function checkFilter(filter: unknown): FilterProblem[] {
  const problems: FilterProblem[] = [];
  if (!isPlainObject(filter)) {
    problems.push({
      pointer: '',
      code: 'filter.not_object',
      message: `a payload filter must be an object of body keys, got ${kindAndValue(filter)}`,
    });
    return problems;
  }
  checkFilterObject(filter, [], problems, 1);
  return problems;
}

/** A filter object whose keys are body keys (the root, or a nested filter). */
function checkFilterObject(obj: { [key: string]: unknown }, path: string[], problems: FilterProblem[], depth: number): void {
  for (const key of Object.keys(obj)) {
    const childPath = [...path, key];
    if (key.startsWith('$')) {
      problems.push({
        pointer: pointerOf(childPath),
        code: 'filter.unknown_operator',
        message: `"${key}" is not an operator: keys starting with "$" are reserved; the operators are in, not_in and exists`,
      });
      continue;
    }
    checkFilterValue(obj[key], childPath, problems, depth);
  }
}

function checkFilterValue(value: unknown, path: string[], problems: FilterProblem[], depth: number): void {
  if (isScalar(value)) return;
  if (Array.isArray(value)) {
    if (value.length === 0) {
      problems.push({
        pointer: pointerOf(path),
        code: 'filter.empty_in',
        message: 'an empty list matches nothing: list at least one value, or remove the key to place no condition',
      });
      return;
    }
    checkScalarList(value, path, problems, 'list');
    return;
  }
  if (!isPlainObject(value)) {
    problems.push({
      pointer: pointerOf(path),
      code: 'filter.invalid_value',
      message: `expected a scalar, a list of scalars or an object, got ${kindAndValue(value)}`,
    });
    return;
  }
  if (depth >= MAX_FILTER_DEPTH) {
    problems.push({
      pointer: pointerOf(path),
      code: 'filter.invalid_value',
      message: `the filter nests deeper than ${MAX_FILTER_DEPTH} levels`,
    });
    return;
  }
  if (hasOperatorKey(value)) {
    checkOperatorObject(value, path, problems);
    return;
  }
  const typos = nearMissOperatorKeys(value);
  if (typos) {
    for (const key of typos) {
      problems.push({
        pointer: pointerOf([...path, key]),
        code: 'filter.unknown_operator',
        message: `"${key}" is not an operator; did you mean "${NEAR_MISSES[normalizeOperatorName(key)]}"? (the operators are in, not_in and exists)`,
      });
    }
    return;
  }
  checkFilterObject(value, path, problems, depth + 1);
}

/**
 * An object without real operators is a nested filter, because payload fields may be named
 * anything. Only when every key is a near-miss of an operator (`IN`, `notIn`, `nin`, `exist`...)
 * holding a value of that operator's shape is it reported as a misspelt operator: the nested
 * reading (a body field named `nin` holding one of the values) is almost surely not what was meant.
 */
function nearMissOperatorKeys(obj: { [key: string]: unknown }): string[] | undefined {
  const keys = Object.keys(obj);
  if (keys.length === 0) return undefined;
  for (const key of keys) {
    const meant = NEAR_MISSES[normalizeOperatorName(key)];
    if (meant === undefined) return undefined;
    const value = obj[key];
    if (meant === 'exists' ? typeof value !== 'boolean' : !Array.isArray(value)) return undefined;
  }
  return keys;
}

function checkOperatorObject(obj: { [key: string]: unknown }, path: string[], problems: FilterProblem[]): void {
  for (const key of Object.keys(obj)) {
    if (isOperatorKey(key)) continue;
    const normalized = normalizeOperatorName(key);
    if (key.startsWith('$') || FOREIGN_OPERATORS.has(normalized)) {
      const meant = NEAR_MISSES[normalized];
      problems.push({
        pointer: pointerOf([...path, key]),
        code: 'filter.unknown_operator',
        message: `"${key}" is not an operator${meant ? `; did you mean "${meant}"?` : ''} (the operators are in, not_in and exists)`,
      });
    } else {
      problems.push({
        pointer: pointerOf([...path, key]),
        code: 'filter.mixed_operators',
        message: `"${key}" sits beside operator keys (${Object.keys(obj).filter(isOperatorKey).join(', ')}): an object holds either operators or nested body keys, not both`,
      });
    }
  }
  const inList = obj.in;
  if (hasOwn(obj, 'in')) {
    if (!Array.isArray(inList)) {
      problems.push({
        pointer: pointerOf([...path, 'in']),
        code: 'filter.invalid_value',
        message: `in must be a list of scalars, got ${kindAndValue(inList)}`,
      });
    } else if (inList.length === 0) {
      problems.push({
        pointer: pointerOf([...path, 'in']),
        code: 'filter.empty_in',
        message: 'in: [] matches nothing: list at least one value, or remove the key to place no condition',
      });
    } else {
      checkScalarList(inList, [...path, 'in'], problems, 'in');
    }
  }
  const notIn = obj.not_in;
  if (hasOwn(obj, 'not_in')) {
    if (!Array.isArray(notIn)) {
      problems.push({
        pointer: pointerOf([...path, 'not_in']),
        code: 'filter.invalid_value',
        message: `not_in must be a list of scalars, got ${kindAndValue(notIn)}`,
      });
    } else {
      checkScalarList(notIn, [...path, 'not_in'], problems, 'not_in');
      if (Array.isArray(inList)) {
        notIn.forEach((item, i) => {
          if (isScalar(item) && inList.some((candidate) => candidate === item)) {
            problems.push({
              pointer: pointerOf([...path, 'not_in', String(i)]),
              code: 'filter.in_and_not_in',
              message: `${describeValue(item)} is listed in both in and not_in, so the filter could never mean what it says`,
            });
          }
        });
      }
    }
  }
  if (hasOwn(obj, 'exists') && typeof obj.exists !== 'boolean') {
    problems.push({
      pointer: pointerOf([...path, 'exists']),
      code: 'filter.invalid_exists',
      message: `exists must be true or false, got ${kindAndValue(obj.exists)}`,
    });
  }
}

function checkScalarList(list: unknown[], path: string[], problems: FilterProblem[], what: string): void {
  list.forEach((item, i) => {
    if (!isScalar(item)) {
      problems.push({
        pointer: pointerOf([...path, String(i)]),
        code: 'filter.invalid_value',
        message: `${what} items must be scalars (string, number, boolean or null), got ${kindAndValue(item)}`,
      });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Evaluation (runtime)
// ---------------------------------------------------------------------------------------------

/*
 * matchFilter is the hot path: no closures, no path arrays, no per-call allocation beyond the
 * recursion itself. explainFilter is a separate, allocating walk with the same rules; a property
 * test (test/core/filter.test.ts) keeps the two in agreement.
 *
 * Both assume a filter that checkFilter accepted. On an unchecked filter they still agree and
 * never throw: a non-list `in` matches nothing, a non-list `not_in` and a non-boolean `exists`
 * place no condition, and non-scalar list items equal nothing.
 */

/** Hot path (runs on every accepted delivery): true when the payload matches. */
export function matchFilter(filter: PayloadFilter, payload: unknown): boolean {
  // No filter: every delivery matches (SPEC 3).
  if (!isPlainObject(filter)) return true;
  return matchObject(filter, payload);
}

/** Every key of a filter object against a body; a body that is not an object has no fields. */
function matchObject(filter: { [key: string]: unknown }, body: unknown): boolean {
  const bodyIsObject = isPlainObject(body);
  for (const key in filter) {
    if (!hasOwn(filter, key)) continue;
    const present = bodyIsObject && hasOwn(body, key);
    if (!matchCondition(filter[key], present, present ? (body as { [key: string]: unknown })[key] : undefined)) return false;
  }
  return true;
}

function matchCondition(cond: unknown, present: boolean, value: unknown): boolean {
  if (Array.isArray(cond)) return present && holdsOneOf(value, cond);
  if (isPlainObject(cond)) {
    if (hasOperatorKey(cond)) return matchOperators(cond, present, value);
    return present && matchNested(cond, value);
  }
  return present && holdsOneOf(value, cond);
}

/** `{in, not_in, exists}` combine with AND (SPEC 3). */
function matchOperators(cond: { [key: string]: unknown }, present: boolean, value: unknown): boolean {
  if (hasOwn(cond, 'exists')) {
    if (cond.exists === true && !present) return false;
    if (cond.exists === false && present) return false;
  }
  if (hasOwn(cond, 'in')) {
    if (!present || !Array.isArray(cond.in) || !holdsOneOf(value, cond.in)) return false;
  }
  // A missing field holds none of the values, so not_in matches it (SPEC 3).
  if (hasOwn(cond, 'not_in') && present && Array.isArray(cond.not_in) && holdsOneOf(value, cond.not_in)) return false;
  return true;
}

/** A nested filter matches an object, or an array with at least one object element that matches. */
function matchNested(cond: { [key: string]: unknown }, value: unknown): boolean {
  if (isPlainObject(value)) return matchObject(cond, value);
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) {
    const element = value[i];
    if (isPlainObject(element) && matchObject(cond, element)) return true;
  }
  return false;
}

/**
 * The field holds one of the values: a scalar equal to an item, or an array with such an element.
 * `list` is an array of items, or one scalar (the shorthand `a` = `[a]`).
 */
function holdsOneOf(value: unknown, list: unknown): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (listHas(list, value[i])) return true;
    return false;
  }
  return listHas(list, value);
}

/** Strict JSON equality of scalars: same type and value; `1` and `1.0` are the same number. */
function listHas(list: unknown, value: unknown): boolean {
  if (value !== null && typeof value === 'object') return false;
  if (!Array.isArray(list)) return list === value;
  for (let i = 0; i < list.length; i++) if (list[i] === value) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Explanation (Test filter, SPEC 8)
// ---------------------------------------------------------------------------------------------

/** `progress`: the index of the failing key at each level, to compare how far elements got. */
type Failure = { path: string[]; reason: string; progress: number[] };

/** Same decision as matchFilter, plus the first failing key path and why (Test filter, SPEC 8). */
export function explainFilter(filter: PayloadFilter, payload: unknown): Explanation {
  if (!isPlainObject(filter)) return { matches: true };
  const failure = explainObject(filter, payload, []);
  return failure ? { matches: false, path: failure.path, reason: failure.reason } : { matches: true };
}

function explainObject(filter: { [key: string]: unknown }, body: unknown, path: string[]): Failure | null {
  const bodyIsObject = isPlainObject(body);
  // At the root only: a body that is not an object has no fields (SPEC 3).
  const absentWhy = bodyIsObject ? undefined : `the body is ${kindOf(body)}, not an object`;
  const keys = Object.keys(filter);
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    const present = bodyIsObject && hasOwn(body, key);
    const value = present ? body[key] : undefined;
    const failure = explainCondition(filter[key], present, value, [...path, key], absentWhy);
    if (failure) return { ...failure, progress: [k, ...failure.progress] };
  }
  return null;
}

function missing(path: string[], expected: string, absentWhy: string | undefined): Failure {
  return fail(path, absentWhy ? `missing: ${absentWhy}` : `missing (expected ${expected})`);
}

function explainCondition(cond: unknown, present: boolean, value: unknown, path: string[], absentWhy: string | undefined): Failure | null {
  if (isPlainObject(cond)) {
    if (hasOperatorKey(cond)) return explainOperators(cond, present, value, path, absentWhy);
    if (!present) return missing(path, 'an object', absentWhy);
    return explainNested(cond, value, path);
  }
  if (!present) return missing(path, listText(cond), absentWhy);
  return holdsOneOf(value, cond) ? null : fail(path, notOneOf(value, cond));
}

function explainOperators(cond: { [key: string]: unknown }, present: boolean, value: unknown, path: string[], absentWhy: string | undefined): Failure | null {
  if (hasOwn(cond, 'exists')) {
    if (cond.exists === true && !present) return missing(path, 'it to exist', absentWhy);
    if (cond.exists === false && present) return fail(path, 'present, but exists: false');
  }
  if (hasOwn(cond, 'in')) {
    const list = cond.in;
    if (!Array.isArray(list)) return fail(path, 'in is not a list, so nothing matches');
    if (!present) return missing(path, listText(list), absentWhy);
    if (!holdsOneOf(value, list)) return fail(path, notOneOf(value, list));
  }
  const notIn = cond.not_in;
  if (hasOwn(cond, 'not_in') && present && Array.isArray(notIn) && holdsOneOf(value, notIn)) {
    if (!Array.isArray(value)) return fail(path, `${describeValue(value)} is listed in not_in`);
    const hit = value.find((element) => listHas(notIn, element));
    return fail(path, `holds ${describeValue(hit)}, which is listed in not_in`);
  }
  return null;
}

function explainNested(cond: { [key: string]: unknown }, value: unknown, path: string[]): Failure | null {
  if (isPlainObject(value)) return explainObject(cond, value, path);
  if (!Array.isArray(value)) return fail(path, `is ${kindOf(value)}, not an object`);
  if (value.length === 0) return fail(path, 'is an empty array, not an object');
  // Any element that is an object may match; on a miss, show the element that got furthest.
  let best: Failure | null = null;
  let bestIndex = -1;
  let objects = 0;
  for (let i = 0; i < value.length; i++) {
    const element = value[i];
    if (!isPlainObject(element)) continue;
    objects++;
    const failure = explainObject(cond, element, [...path, ARRAY_ELEMENT]);
    if (!failure) return null;
    if (!best || furtherThan(failure.progress, best.progress)) {
      best = failure;
      bestIndex = i;
    }
  }
  if (!best) return fail(path, 'is an array with no object elements, not an object');
  if (objects === 1) return best;
  return { ...best, reason: `${best.reason} (no element matches; element ${bestIndex} shown)` };
}

function fail(path: string[], reason: string): Failure {
  return { path, reason, progress: [] };
}

/** Lexicographic: a later failing key at the first differing level, or a deeper failure, got further. */
function furtherThan(a: number[], b: number[]): boolean {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i]! > b[i]!;
  return a.length > b.length;
}

const LIST_SHOWN = 5;

/** `"a"` for one value, `one of "a", "b"` for several. */
function listText(list: unknown): string {
  if (!Array.isArray(list)) return describeValue(list);
  if (list.length === 1) return describeValue(list[0]);
  const shown = list.slice(0, LIST_SHOWN).map(describeValue).join(', ');
  return `one of ${shown}${list.length > LIST_SHOWN ? ` and ${list.length - LIST_SHOWN} more` : ''}`;
}

function notOneOf(value: unknown, list: unknown): string {
  const expected = listText(list);
  if (Array.isArray(value)) {
    if (value.length === 0) return `is an empty array (expected ${expected})`;
    return `no element of ${describeValue(value)} is ${expected}`;
  }
  if (value !== null && typeof value === 'object') return `is an object, not ${expected}`;
  return `${describeValue(value)} is not ${expected}${typeHint(value, list)}`;
}

/** `1` against `"1"`: say that the comparison is strict, since the two look alike. */
function typeHint(value: unknown, list: unknown): string {
  const items = Array.isArray(list) ? list : [list];
  const twin = items.find((item) => item !== value && typeof item !== typeof value && isScalar(item) && String(item) === String(value));
  return twin === undefined ? '' : ` (${kindOf(value).replace(/^an? /, '')} ${describeValue(value)} never equals ${kindOf(twin).replace(/^an? /, '')} ${describeValue(twin)})`;
}

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/**
 * Human form of a key path, e.g. `pull_request.labels[].name`: keys joined with dots, `[]` for
 * "an element of this array", and keys with dots or other characters quoted as JSON strings.
 */
export function formatPath(path: string[]): string {
  let out = '';
  for (const segment of path) {
    if (segment === ARRAY_ELEMENT) {
      out += '[]';
      continue;
    }
    const shown = PLAIN_KEY.test(segment) ? segment : JSON.stringify(segment);
    out += out === '' ? shown : '.' + shown;
  }
  return out;
}
