/**
 * What the filter modules share: the filter's types, the operator keys and the small predicates
 * every walk uses. Pure.
 */
import type { Json } from '../snapshot.ts';

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

/**
 * Where a problem's position belongs: on the key for a key that should not be there (an unknown
 * operator, a body key beside operators), else on the offending value.
 */
export function problemAtKey(code: FilterProblemCode): boolean {
  return code === 'filter.unknown_operator' || code === 'filter.mixed_operators';
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

export const hasOwn = Object.hasOwn;

export function isPlainObject(value: unknown): value is { [key: string]: unknown } {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function isScalar(value: unknown): value is null | boolean | number | string {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

export function isOperatorKey(key: string): boolean {
  return (FILTER_OPERATORS as readonly string[]).includes(key);
}

export function hasOperatorKey(obj: { [key: string]: unknown }): boolean {
  return hasOwn(obj, 'in') || hasOwn(obj, 'not_in') || hasOwn(obj, 'exists');
}

/** A short, quoted rendering of a value for messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  const text = jsonPreview(value, 61);
  if (text.length <= 60) return text;
  // A long string (a comment body) would drown the message: keep its start.
  if (typeof value === 'string') return text.slice(0, 56) + '..."';
  return text.slice(0, 57) + (isPlainObject(value) ? '...}' : '...');
}

/**
 * The first `max` characters of a value's JSON, produced without recursion and without
 * serialising the rest: a payload may be 256 KiB wide or nested thousands of levels deep, and a
 * message needs only its start.
 */
export function jsonPreview(value: unknown, max: number): string {
  let out = '';
  // Each frame is an iterator over the tokens still to write for one array or object.
  const stack: Iterator<unknown>[] = [];
  const open = (v: unknown): void => {
    if (Array.isArray(v)) {
      out += '[';
      stack.push(
        (function* () {
          for (let i = 0; i < v.length; i++) {
            if (i) yield ',';
            yield { value: v[i] };
          }
          yield ']';
        })(),
      );
    } else if (isPlainObject(v)) {
      out += '{';
      stack.push(
        (function* () {
          let first = true;
          for (const key of Object.keys(v)) {
            if (v[key] === undefined) continue;
            yield (first ? '' : ',') + JSON.stringify(key) + ':';
            first = false;
            yield { value: v[key] };
          }
          yield '}';
        })(),
      );
    } else {
      // Only the start of a long string can be shown.
      out += JSON.stringify(typeof v === 'string' && v.length > max ? v.slice(0, max) : v) ?? 'null';
    }
  };
  open(value);
  while (stack.length && out.length < max) {
    const next = stack[stack.length - 1].next();
    if (next.done) stack.pop();
    else if (typeof next.value === 'string') out += next.value;
    else open((next.value as { value: unknown }).value);
  }
  return out.length <= max ? out : out.slice(0, max);
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
