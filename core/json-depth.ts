/**
 * How deeply JSON nests, measured without recursion. `JSON.parse` copes with any depth, but
 * `JSON.stringify` and every recursive walk overflow the stack somewhere past a few thousand
 * levels, so a body that nests deeper than anything legitimate is refused at the door (docs/api.md:
 * a bad input is a 4xx, never a 500). Pure: text or a parsed value in, a number out.
 */

/**
 * Deepest nesting the management and run APIs accept (runtime/http/body.ts). The deepest
 * legitimate body is a plan/apply snapshot whose payload filter nests to MAX_FILTER_DEPTH (32,
 * core/filter.ts): 7 levels of snapshot around 33 of filter, 40 in all. 64 leaves room and is
 * still far below any stack limit.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACE = 0x7d; // }
const OPEN_BRACKET = 0x5b; // [
const CLOSE_BRACKET = 0x5d; // ]

/**
 * The deepest nesting of objects and arrays in JSON text, by one linear scan: `1` is 0, `{}` and
 * `[]` are 1, `{"a":[1]}` is 2. Brackets inside strings (escapes included) do not count. The text
 * need not be valid JSON; an unterminated string ends the scan. With `stopAbove`, the scan stops
 * at the first level deeper than it and returns that level (so only `> stopAbove` is meaningful).
 */
export function jsonTextDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth > 0) depth--;
    }
  }
  return max;
}

/**
 * The same measure for a parsed value, with an explicit stack instead of recursion: scalars are
 * 0, `{}` and `[]` are 1. Stops at the first level deeper than `stopAbove`, like jsonTextDepth.
 */
export function jsonValueDepth(value: unknown, stopAbove = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) {
      max = depth;
      if (max > stopAbove) return max;
    }
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return max;
}
