/**
 * The filter grammar check the compiler runs (docs/filters.md): every problem at once, each with a
 * JSON pointer relative to the filter root. Pure.
 */
import { describeValue, hasOperatorKey, hasOwn, isOperatorKey, isPlainObject, isScalar, kindOf, MAX_FILTER_DEPTH, type FilterProblem } from './common.ts';
import { unstorable } from '../text.ts';

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

/** "a string \"x\"", "null", "an array [1]" for messages that quote the input. */
function kindAndValue(value: unknown): string {
  if (value === null || value === undefined) return kindOf(value);
  return `${kindOf(value)} ${describeValue(value)}`;
}

/**
 * Compile-time grammar check of a payload filter (docs/filters.md): returns every problem at once,
 * in a stable order, each with a JSON pointer relative to the filter root. An empty list means the
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
    const oddKey = unstorable(key);
    if (oddKey) {
      problems.push({ pointer: pointerOf(childPath), code: 'filter.invalid_value', message: `this key has ${oddKey}, which no delivery's key can hold once stored` });
      continue;
    }
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
  if (isScalar(value)) {
    scalarProblem(value, path, problems);
    return;
  }
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

/**
 * A scalar the filter cannot compare as written: an integer beyond 2^53 is already another number
 * once read (9007199254740993 is 9007199254740992), so it would match a value it does not name.
 */
function scalarProblem(value: null | boolean | number | string, path: string[], problems: FilterProblem[]): void {
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    problems.push({ pointer: pointerOf(path), code: 'filter.invalid_value', message: `${value} is beyond the integers a number holds exactly (±9007199254740991); compare such ids as strings, if the payload sends them as strings` });
  } else if (typeof value === 'string') {
    const odd = unstorable(value);
    if (odd) problems.push({ pointer: pointerOf(path), code: 'filter.invalid_value', message: `this string has ${odd}, which the runtime refuses in any request` });
  }
}

function checkScalarList(list: unknown[], path: string[], problems: FilterProblem[], what: string): void {
  list.forEach((item, i) => {
    if (isScalar(item)) scalarProblem(item, [...path, String(i)], problems);
    else {
      problems.push({
        pointer: pointerOf([...path, String(i)]),
        code: 'filter.invalid_value',
        message: `${what} items must be scalars (string, number, boolean or null), got ${kindAndValue(item)}`,
      });
    }
  });
}

