/** The filter evaluator the runtime runs on every accepted delivery (docs/filters.md). Pure. */
import { hasOperatorKey, hasOwn, isPlainObject, type PayloadFilter } from './common.ts';

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
  // No filter: every delivery matches (docs/filters.md).
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

/** `{in, not_in, exists}` combine with AND (docs/filters.md). */
function matchOperators(cond: { [key: string]: unknown }, present: boolean, value: unknown): boolean {
  if (hasOwn(cond, 'exists')) {
    if (cond.exists === true && !present) return false;
    if (cond.exists === false && present) return false;
  }
  if (hasOwn(cond, 'in')) {
    if (!present || !Array.isArray(cond.in) || !holdsOneOf(value, cond.in)) return false;
  }
  // A missing field holds none of the values, so not_in matches it (docs/filters.md).
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
export function holdsOneOf(value: unknown, list: unknown): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (listHas(list, value[i])) return true;
    return false;
  }
  return listHas(list, value);
}

/** Strict JSON equality of scalars: same type and value; `1` and `1.0` are the same number. */
export function listHas(list: unknown, value: unknown): boolean {
  if (value !== null && typeof value === 'object') return false;
  if (!Array.isArray(list)) return list === value;
  for (let i = 0; i < list.length; i++) if (list[i] === value) return true;
  return false;
}

