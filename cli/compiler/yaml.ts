import { LineCounter, isAlias, isMap, isPair, isScalar, isSeq, parseDocument, visit, type Document, type Node } from 'yaml';
import type { DiagnosticCode } from './diagnostics.ts';

/** A YAML problem found while parsing, at a character offset of the parsed text. */
export interface YamlProblem {
  code: DiagnosticCode;
  message: string;
  offset: number;
}

export interface ParsedYaml {
  doc: Document.Parsed;
  lineCounter: LineCounter;
  /** The plain value; undefined when the text has a YAML problem (nothing is expanded then). */
  value: unknown;
  problems: YamlProblem[];
}

/**
 * Parses one YAML document with positions (docs/definitions.md). Anchors, aliases, explicit tags,
 * merge keys, duplicate keys and extra documents are errors, so that every value has exactly one
 * source position. Aliases are rejected before any conversion to plain values, so an alias bomb is
 * never expanded; maxAliasCount 0 is a second guard.
 */
export function parseYaml(text: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, merge: false, prettyErrors: false });
  const problems: YamlProblem[] = [];
  for (const e of doc.errors) {
    const code: DiagnosticCode =
      e.code === 'MULTIPLE_DOCS' ? 'yaml.multiple_documents' : e.code === 'DUPLICATE_KEY' ? 'yaml.duplicate_key' : 'yaml.syntax';
    const message =
      code === 'yaml.multiple_documents'
        ? 'a file holds exactly one YAML document; remove this `---` separator and what follows'
        : code === 'yaml.duplicate_key'
          ? `duplicate key ${quoteKeyAt(text, e.pos[0])}; each key may appear once`
          : e.code === 'RESOURCE_EXHAUSTION'
            ? 'the YAML nests too deeply to read here; definitions need only a few levels'
            : firstLine(e.message);
    problems.push({ code, message, offset: e.pos[0] });
  }
  // An alias bomb holds thousands of anchors and aliases: each kind is reported once per file, at
  // its first place, with a count of the others, so the diagnostic stays one clear line.
  const firsts = new Map<DiagnosticCode, { problem: YamlProblem; more: number }>();
  const once = (problem: YamlProblem) => {
    const seen = firsts.get(problem.code);
    if (seen) seen.more += 1;
    else {
      firsts.set(problem.code, { problem, more: 0 });
      problems.push(problem);
    }
  };
  const checkAnchorAndTag = (node: Node) => {
    if (isAlias(node)) return;
    const n = node as Node & { anchor?: string; tag?: string };
    // A node's range starts after its anchor and tag; point at the `&` or `!` itself.
    if (n.anchor) {
      const at = text.lastIndexOf(`&${n.anchor}`, start(n));
      once({ code: 'yaml.anchor', message: `anchors (&${n.anchor}) are not allowed`, offset: at < 0 ? start(n) : at });
    }
    if (n.tag) {
      let at = text.lastIndexOf('!', start(n));
      while (at > 0 && !/[\s,[{]/.test(text[at - 1])) at--;
      const source = at < 0 ? n.tag : text.slice(at).split(/\s/)[0];
      problems.push({ code: 'yaml.tag', message: `explicit tags (${source}) are not allowed; write a plain value`, offset: at < 0 ? start(n) : at });
    }
  };
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.type === 'PLAIN' && pair.key.value === '<<') {
        problems.push({ code: 'yaml.merge_key', message: 'merge keys (<<) are not allowed; write the keys out', offset: start(pair.key) });
      }
      // A list or a map as a key (`? [a]`) has no place in a definition, and converting it to a
      // plain object would stringify it.
      if (isMap(pair.key) || isSeq(pair.key)) {
        problems.push({ code: 'yaml.complex_key', message: 'a key must be plain text, not a list or a map', offset: start(pair.key) });
      }
      // A key YAML reads as a number, a boolean or null becomes text again in the plain value,
      // not always as written (`1.0` is "1", `010` is "10", `TRUE` is "true", `~` is ""): the
      // key would silently be another one. Such a key must be quoted.
      if (isScalar(pair.key) && typeof pair.key.value !== 'string' && pair.key.source !== undefined && jsKey(pair.key.value) !== pair.key.source) {
        problems.push({ code: 'yaml.complex_key', message: `the key ${pair.key.source} is read as ${JSON.stringify(jsKey(pair.key.value))}; quote it ('${pair.key.source}':) to keep it as written`, offset: start(pair.key) });
      }
    },
    // yaml's visit() calls an explicit Map visitor instead of Node for a map, so a map's anchor
    // and tag are checked here as well as in Node.
    Map(_, map) {
      checkAnchorAndTag(map);
      // Keys that differ in YAML (true and "true", 1 and "1") are the same key once plain: a duplicate.
      const seen = new Map<string, { value: unknown; written: string }>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const key = jsKey(pair.key.value);
        const written = text.slice(start(pair.key), pair.key.range?.[1] ?? start(pair.key));
        const first = seen.get(key);
        // The same value twice is yaml's own duplicate_key, reported above.
        if (first && first.value !== pair.key.value) {
          problems.push({ code: 'yaml.duplicate_key', message: `duplicate key '${key}': ${first.written} and ${written} are the same key; each key may appear once`, offset: start(pair.key) });
        }
        if (!first) seen.set(key, { value: pair.key.value, written });
      }
    },
    Alias(_, node) {
      once({ code: 'yaml.alias', message: `aliases (*${node.source}) are not allowed; write the value out`, offset: start(node) });
    },
    Node(_, node) {
      checkAnchorAndTag(node);
    },
  });
  for (const { problem, more } of firsts.values()) {
    if (more > 0) problem.message += ` (${more} more in this file)`;
  }
  const value = problems.length === 0 ? doc.toJS({ maxAliasCount: 0 }) : undefined;
  return { doc, lineCounter, value, problems };
}

const start = (node: { range?: [number, number, number] | null }) => node.range?.[0] ?? 0;
/** A key as the plain value holds it (yaml's toJS): null is "", anything else its text. */
const jsKey = (value: unknown): string => (value === null ? '' : String(value));
const firstLine = (s: string) => s.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');

function quoteKeyAt(text: string, offset: number): string {
  const m = /^("[^"\n]*"|'[^'\n]*'|[^:\n]+?)\s*:/.exec(text.slice(offset, offset + 200));
  return m ? `'${m[1].replace(/^["']|["']$/g, '')}'` : '';
}

/** A 1-based position. */
export interface Position {
  line: number;
  column: number;
}

/**
 * The position of the node a JSON pointer names. `key` mode prefers the key of the last member
 * (for an unknown key); when the pointer runs past what exists (a missing key), the deepest
 * existing node is returned: the parent (docs/plan-apply.md).
 */
export function positionOf(parsed: ParsedYaml, pointer: string, mode: 'value' | 'key' = 'value'): Position {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: unknown = parsed.doc.contents;
  let keyNode: unknown;
  let complete = true;
  for (const seg of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === seg);
      if (!pair) {
        complete = false;
        break;
      }
      keyNode = pair.key;
      node = pair.value ?? pair.key;
    } else if (isSeq(node) && /^\d+$/.test(seg) && Number(seg) < node.items.length) {
      keyNode = undefined;
      node = node.items[Number(seg)];
    } else {
      complete = false;
      break;
    }
  }
  const target = complete && mode === 'key' && keyNode ? keyNode : node;
  const range = (target as { range?: [number, number, number] } | null)?.range;
  // An empty value (`key:`) sits after its key; point at the key so the column makes sense.
  const offset = range ? (range[0] === range[1] && keyNode ? start(keyNode as Node) : range[0]) : 0;
  return toPosition(parsed, offset);
}

export function toPosition(parsed: ParsedYaml, offset: number): Position {
  const { line, col } = parsed.lineCounter.linePos(offset);
  return { line, column: col };
}
