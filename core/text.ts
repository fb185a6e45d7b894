/**
 * The number of characters (Unicode code points) in `s`. JSON Schema's `maxLength` counts these,
 * where a string's `.length` counts UTF-16 units, two for an emoji or any character beyond the
 * Basic Multilingual Plane; every length limit the API publishes is checked with this, so the
 * published schema and the route accept and refuse alike (docs/api.md).
 */
export function charCount(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** The most characters of a prompt's first line that stand in for a missing title. */
export const DERIVED_TITLE_CHARS = 80;

/**
 * The title a run without one is shown with: the first line of its prompt that is not blank,
 * trimmed, cut to DERIVED_TITLE_CHARS characters with an ellipsis (docs/api.md#runs). Oz
 * clients read `title` as a string that is always there.
 */
export function titleFromPrompt(prompt: string): string {
  // Every view of a run asks this, and a prompt may be a megabyte on one line.
  return clip(/\S[^\r\n]*/.exec(prompt)?.[0].trimEnd() ?? '', DERIVED_TITLE_CHARS);
}

/** `text` whole up to `max` characters (not UTF-16 units), else its first `max - 1` and an ellipsis. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  // Only the start is read (a text may be a megabyte): two UTF-16 units a character at most, so
  // this many hold one character more than are kept.
  const chars = [...text.slice(0, 2 * max + 2)];
  return chars.length > max ? chars.slice(0, max - 1).join('') + '…' : text;
}

/** A UTF-16 surrogate without its other half. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What a string of a definition or a request cannot hold, in words, or undefined: a NUL character
 * (PostgreSQL's text refuses it) or an unpaired UTF-16 surrogate (UTF-8 cannot hold it). The API
 * refuses both in any request (docs/api.md#conventions), so the compiler reports them first.
 */
export function unstorable(text: string): string | undefined {
  if (text.includes('\0')) return 'a NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate';
  return undefined;
}

/**
 * A name a person gives (an API key's, a worker's): 1 to 128 characters, none of them a control
 * character. Counted in characters (`u`), as the API's schemas count.
 */
export const PLAIN_NAME = /^[^\x00-\x1f\x7f]{1,128}$/u;

/**
 * The most characters of an id or name a request gave that an error's detail quotes back: more
 * than any valid one has (a delivery id, the longest, has 200), so only a value that cannot name
 * anything is cut.
 */
export const ECHO_CHARS = 200;

/**
 * An id or name from a request as an error quotes it back (docs/errors.md): whole up to
 * ECHO_CHARS characters, cut with an ellipsis beyond, so a 404 for a 5,000-character id is not
 * 5,000 characters long.
 */
export function echoed(value: string): string {
  return clip(value, ECHO_CHARS);
}
