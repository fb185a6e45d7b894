/**
 * A fast reader for the plain YAML that nearly every definitions file is written in
 * (docs/architecture.md#compile-speed): block mappings and sequences, one-line flow collections,
 * plain, single- and simple double-quoted scalars, and comments. It builds no syntax tree and no
 * positions, which is most of what parsing costs in a large repo.
 *
 * It returns the value only when it is sure the `yaml` package would read the same text without
 * a problem and to the same value; at anything else (anchors, tags, block scalars, multi-line
 * scalars, tabs, escapes, duplicate keys, odd indentation, numbers other than decimal integers) it
 * gives up and returns undefined, and the caller parses the text with `yaml` (parseYaml), which
 * finds the problems and positions. A file that needs a position (a diagnostic) is parsed with
 * `yaml` then too, so every diagnostic is the same either way.
 */

/** The deepest nesting read here; deeper texts are left to `yaml`. */
const MAX_DEPTH = 64;

class GiveUp {}
const GIVE_UP = new GiveUp();
const giveUp = (): never => {
  throw GIVE_UP;
};

/**
 * Characters that make the text too unusual for this reader: tabs, CR, the BOM, controls, the
 * non-ASCII line breaks, and the `\` of a double-quoted escape.
 */
// eslint-disable-next-line no-control-regex
const UNUSUAL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\\\u2028\u2029\ufeff]/;

/** The core schema's scalars other than strings (yaml's core schema tags, in the order it tries them). */
const NULL = /^(?:~|[Nn]ull|NULL)?$/;
const BOOL = /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/;
const INT = /^[-+]?[0-9]+$/;
const OTHER_NUMBER = /^(?:0o[0-7]+|0x[0-9a-fA-F]+|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$/;
/** A key: a plain word that resolves to a string. */
const KEY = /^[A-Za-z0-9_][A-Za-z0-9_./-]*$/;

/** The value of a plain scalar as the core schema resolves it. */
function plainValue(s: string): unknown {
  // Most scalars are words: one that starts with a letter other than those of null, true and false is a string.
  const c = s.charCodeAt(0) | 0x20;
  if (c >= 0x61 && c <= 0x7a && c !== 0x6e && c !== 0x74 && c !== 0x66) return s;
  if (NULL.test(s)) return null;
  if (BOOL.test(s)) return s[0] === 't' || s[0] === 'T';
  if (/^0o/.test(s)) giveUp();
  if (INT.test(s)) return parseInt(s, 10);
  if (OTHER_NUMBER.test(s)) giveUp();
  return s;
}

/**
 * What a plain scalar may not start with: YAML's indicators (the flow and quote starts are read
 * before this is asked), except a `-` followed by a character other than a space (`-p`, `--verbose`).
 */
const INDICATOR = /^(?:[?:,[\]{}#&*!|>'"%@`]|-(?![^ ]))/;

interface Line {
  indent: number;
  /** The line without its indentation. */
  text: string;
}

/** The plain value of `text` when it is plain YAML this reader is sure about; else undefined. */
export function readPlainYaml(text: string): { value: unknown } | undefined {
  if (UNUSUAL.test(text)) return undefined;
  const lines: Line[] = [];
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    // Only spaces are white space here (tabs are given up on); String.trim would take Unicode spaces too.
    let from = start;
    while (from < end && text.charCodeAt(from) === 0x20) from++;
    let to = end;
    while (to > from && text.charCodeAt(to - 1) === 0x20) to--;
    const first = text[from];
    // Blank lines and comment lines say nothing outside block scalars (which are not read here).
    if (from < to && first !== '#') {
      // A document marker or a directive: left to yaml.
      if (from === start && (first === '%' || text.startsWith('---', from) || text.startsWith('...', from))) return undefined;
      lines.push({ indent: from - start, text: text.slice(from, to) });
    }
    start = end + 1;
  }
  if (lines.length === 0 || lines[0].indent !== 0) return undefined;
  try {
    const reader = new Reader(lines);
    const value = reader.block(0, 0);
    if (reader.i !== lines.length) return undefined;
    return { value };
  } catch (err) {
    if (err === GIVE_UP) return undefined;
    throw err;
  }
}

class Reader {
  i = 0;
  constructor(private readonly lines: Line[]) {}

  /** The block collection whose first line is the current one, at that line's indentation. */
  block(minIndent: number, depth: number): unknown {
    if (depth > MAX_DEPTH) giveUp();
    const line = this.lines[this.i];
    if (line.indent < minIndent) giveUp();
    return isItem(line.text) ? this.sequence(line.indent, depth) : this.mapping(line.indent, depth);
  }

  private sequence(indent: number, depth: number): unknown[] {
    const out: unknown[] = [];
    while (this.i < this.lines.length) {
      const line = this.lines[this.i];
      // A key at the sequence's own indentation ends it (`key:` above it, then `- item` lines).
      if (line.indent < indent || (line.indent === indent && !isItem(line.text))) break;
      if (line.indent > indent) giveUp();
      const rest = line.text.slice(1).replace(/^ +/, '');
      if (rest === '' || rest[0] === '#') {
        if (rest !== '' && line.text[1] !== ' ') giveUp();
        this.i++;
        out.push(this.childOrNull(indent, depth));
        continue;
      }
      if (isItem(rest)) giveUp();
      const column = indent + (line.text.length - rest.length);
      if (keyOf(rest) !== undefined) {
        // `- key: value`: a mapping whose keys line up with this first one.
        this.lines[this.i] = { indent: column, text: rest };
        out.push(this.mapping(column, depth + 1));
        continue;
      }
      this.i++;
      out.push(inlineValue(rest, depth));
      this.noDeeperLine(indent);
    }
    // An array grown by push keeps room for 16 items; its copy holds only its own, and the values
    // of every file are kept to the end of a compile.
    return out.slice();
  }

  private mapping(indent: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    while (this.i < this.lines.length) {
      const line = this.lines[this.i];
      if (line.indent < indent) break;
      if (line.indent > indent) giveUp();
      const key = keyOf(line.text);
      if (key === undefined) giveUp();
      if (Object.hasOwn(out, key!)) giveUp();
      const rest = line.text.slice(key!.length + 1);
      this.i++;
      if (rest === '' || isComment(rest)) {
        // `key:` with its value on the lines below, or a sequence at the key's own indentation.
        const next = this.lines[this.i];
        out[key!] = next !== undefined && next.indent === indent && isItem(next.text) ? this.block(indent, depth + 1) : this.childOrNull(indent, depth);
      } else {
        if (rest[0] !== ' ') giveUp();
        out[key!] = inlineValue(rest.replace(/^ +/, ''), depth);
        this.noDeeperLine(indent);
      }
    }
    return out;
  }

  /** A collection on the following, deeper lines; null when the next line is not deeper. */
  private childOrNull(indent: number, depth: number): unknown {
    const next = this.lines[this.i];
    if (next === undefined || next.indent <= indent) return null;
    return this.block(indent + 1, depth + 1);
  }

  /** A deeper line after a one-line value would continue it (a multi-line scalar): left to yaml. */
  private noDeeperLine(indent: number): void {
    const next = this.lines[this.i];
    if (next !== undefined && next.indent > indent) giveUp();
  }
}

/** Spaces then `#`: a comment after a value. */
const isComment = (rest: string) => {
  let i = 0;
  while (rest.charCodeAt(i) === 0x20) i++;
  return i > 0 && rest[i] === '#';
};

const isItem = (text: string) => text[0] === '-' && (text.length === 1 || text[1] === ' ');

/** The key of a `key: value` or `key:` line, when it is a plain word that resolves to a string. */
function keyOf(text: string): string | undefined {
  const colon = text.indexOf(':');
  if (colon <= 0 || (colon + 1 < text.length && text[colon + 1] !== ' ')) return undefined;
  const key = text.slice(0, colon);
  if (key.length > 256 || !KEY.test(key) || key === '__proto__' || typeof plainValue(key) !== 'string') return undefined;
  return key;
}

/** A value on one line: a flow collection, a quoted scalar or a plain scalar, then maybe a comment. */
function inlineValue(text: string, depth: number): unknown {
  const first = text[0];
  if (first === '[' || first === '{' || first === "'" || first === '"') {
    const flow = new Flow(text, depth);
    const value = flow.value();
    const rest = text.slice(flow.at);
    if (rest !== '' && !isComment(rest)) giveUp();
    return value;
  }
  if (INDICATOR.test(text)) giveUp();
  // A comment starts at a # after a space; `: ` would start a nested mapping, which yaml refuses.
  const hash = text.indexOf(' #');
  const plain = (hash < 0 ? text : text.slice(0, hash)).replace(/ +$/, '');
  if (plain.includes(': ') || plain.endsWith(':')) giveUp();
  return plainValue(plain);
}

const ENDS_FLOW_PLAIN = new Set([',', '[', ']', '{', '}']);
/** What ends a key in a flow mapping: the flow indicators, `:` and white space (a space; tabs are not read here). */
const ENDS_FLOW_KEY = new Set([...ENDS_FLOW_PLAIN, ':', ' ']);

/** A one-line flow collection or quoted scalar, read from `at`. */
class Flow {
  at = 0;
  constructor(
    private readonly text: string,
    private readonly depth: number,
  ) {}

  value(depth = this.depth): unknown {
    if (depth > MAX_DEPTH) giveUp();
    const c = this.text[this.at];
    if (c === '[') return this.sequence(depth);
    if (c === '{') return this.mapping(depth);
    if (c === "'" || c === '"') return this.quoted(c);
    return this.plain();
  }

  private spaces(): void {
    while (this.text[this.at] === ' ') this.at++;
  }

  /** Past the opening bracket and the spaces after it: true when the collection is empty (`[]`, `{}`). */
  private opens(close: string): boolean {
    this.at++;
    this.spaces();
    if (this.text[this.at] !== close) return false;
    this.at++;
    return true;
  }

  /** After an item: true past the closing bracket, or false past a `,` and the spaces after it. */
  private closes(close: string): boolean {
    this.spaces();
    const c = this.text[this.at++];
    if (c === close) return true;
    if (c !== ',') giveUp();
    this.spaces();
    return false;
  }

  private sequence(depth: number): unknown[] {
    const out: unknown[] = [];
    if (this.opens(']')) return out;
    do {
      out.push(this.value(depth + 1));
    } while (!this.closes(']'));
    return out.slice();
  }

  private mapping(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.opens('}')) return out;
    do {
      const start = this.at;
      while (this.at < this.text.length && !ENDS_FLOW_KEY.has(this.text[this.at])) this.at++;
      const key = this.text.slice(start, this.at);
      if (!KEY.test(key) || key === '__proto__' || typeof plainValue(key) !== 'string' || Object.hasOwn(out, key)) giveUp();
      if (this.text[this.at] !== ':' || this.text[this.at + 1] !== ' ') giveUp();
      this.at += 2;
      this.spaces();
      out[key] = this.value(depth + 1);
    } while (!this.closes('}'));
    return out;
  }

  /** A quoted scalar without escapes (no `\` in the text) and without a line break. */
  private quoted(quote: string): string {
    let out = '';
    let from = ++this.at;
    for (;;) {
      const end = this.text.indexOf(quote, from);
      if (end < 0) giveUp();
      // In single quotes, '' is one quote.
      if (quote === "'" && this.text[end + 1] === "'") {
        out += this.text.slice(from, end + 1);
        from = end + 2;
        continue;
      }
      out += this.text.slice(from, end);
      this.at = end + 1;
      return out;
    }
  }

  /** A plain scalar inside a flow collection: no indicators, no `:` and no `#` (left to yaml). */
  private plain(): unknown {
    const start = this.at;
    while (this.at < this.text.length && !ENDS_FLOW_PLAIN.has(this.text[this.at])) this.at++;
    const s = this.text.slice(start, this.at).replace(/ +$/, '');
    if (s === '' || INDICATOR.test(s) || s.includes(':') || s.includes('#')) giveUp();
    return plainValue(s);
  }
}
