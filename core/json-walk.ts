/**
 * A walk over a parsed JSON value, without recursion (a body may nest thousands of levels before
 * its depth is refused), that names each place with its JSON pointer (RFC 6901). The API's body
 * reader and the compiler's text check walk with it.
 */

/** One segment of a JSON pointer: `~` as `~0`, `/` as `~1`. */
export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** What a visitor answers: go on (nothing), stop the walk, or (for a key) leave its value out. */
export type WalkAnswer = 'stop' | 'skip' | undefined | void;

export interface JsonVisitor {
  /** Every value that is not an array or an object, at its pointer (`''` for the root). */
  value?(value: unknown, pointer: string): WalkAnswer;
  /** Every key of an object, with the object's pointer and the key's own. */
  key?(key: string, parent: string, pointer: string): WalkAnswer;
}

/**
 * Visits `root` depth first, the last child of each array and object first; returns true when a
 * visitor stopped the walk.
 */
export function walkJson(root: unknown, visit: JsonVisitor): boolean {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length > 0) {
    const [value, at] = stack.pop()!;
    if (Array.isArray(value)) {
      value.forEach((v, i) => stack.push([v, `${at}/${i}`]));
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        const pointer = `${at}/${escapePointer(k)}`;
        const answer = visit.key?.(k, at, pointer);
        if (answer === 'stop') return true;
        if (answer !== 'skip') stack.push([v, pointer]);
      }
    } else if (visit.value?.(value, at) === 'stop') {
      return true;
    }
  }
  return false;
}
