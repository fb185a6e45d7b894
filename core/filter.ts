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
  return key === 'in' || key === 'not_in' || key === 'exists';
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
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function pointerOf(path: readonly string[]): string {
  let out = '';
  for (const token of path) out += '/' + escapePointerToken(token);
  return out;
}

/** A short, quoted rendering of a value for messages. */
export function describeValue(value: unknown): string {
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
  return safeJson(value);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** "a string", "an array", "null", ... for messages. */
export function kindOf(value: unknown): string {
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
 * Compile-time grammar check of a payload filter (SPEC 3): returns every problem at once, in
 * document order, each with a JSON pointer relative to the filter root. An empty list means the
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

/** Hot path (runs on every accepted delivery): true when the payload matches. */
export function matchFilter(filter: PayloadFilter, payload: unknown): boolean {
  void filter;
  void payload;
  throw new Error('matchFilter: not implemented yet');
}

/** Same decision as matchFilter, plus the first failing key path and why (Test filter, SPEC 8). */
export function explainFilter(filter: PayloadFilter, payload: unknown): Explanation {
  void filter;
  void payload;
  throw new Error('explainFilter: not implemented yet');
}

/** Human form of a key path, e.g. `pull_request.labels[].name`; keys with dots or odd characters are quoted. */
export function formatPath(path: string[]): string {
  return path.join('.');
}
