/** The explanation of a non-match, for Test filter and `factory filter test` (docs/automations.md). Pure. */
import { ARRAY_ELEMENT, describeValue, hasOperatorKey, hasOwn, isPlainObject, isScalar, kindOf, type Explanation, type PayloadFilter } from './common.ts';
import { holdsOneOf, listHas } from './evaluate.ts';

/** `progress`: the index of the failing key at each level, to compare how far elements got. */
type Failure = { path: string[]; reason: string; progress: number[] };

/** Same decision as matchFilter, plus the first failing key path and why (Test filter, docs/automations.md). */
export function explainFilter(filter: PayloadFilter, payload: unknown): Explanation {
  if (!isPlainObject(filter)) return { matches: true };
  const failure = explainObject(filter, payload, []);
  return failure ? { matches: false, path: failure.path, reason: failure.reason } : { matches: true };
}

function explainObject(filter: { [key: string]: unknown }, body: unknown, path: string[]): Failure | null {
  const bodyIsObject = isPlainObject(body);
  // At the root only: a body that is not an object has no fields (docs/filters.md).
  const absentWhy = bodyIsObject ? undefined : `the body is ${kindOf(body)}, not an object`;
  // Keys in code-unit order, the order a snapshot stores them in (canonical JSON): the runtime
  // never sees the file's order, so `filter test` on the file and Test filter on the runtime's copy
  // name the same first failing key only if neither uses it (docs/filters.md#explanations).
  const keys = Object.keys(filter).sort();
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
