import type { Diagnostic } from './diagnostics.ts';
import { promptOf, splitFrontMatter, yamlOf, type FrontMatter } from './front-matter.ts';
import { isMarkdownKind, type DefinitionKind } from './paths.ts';
import type { Locate } from './schema-diagnostics.ts';
import { parseYaml, positionOf, toPosition, type ParsedYaml } from './yaml.ts';
import { readPlainYaml } from './yaml-fast.ts';
import { unstorable } from '../../core/text.ts';
import { walkJson } from '../../core/json-walk.ts';

/** Definitions are small; a size cap bounds parse time and memory (docs/definitions.md#rules). */
export const MAX_FILE_BYTES = 1024 * 1024;

/** One definitions file, parsed with positions. */
export interface ParsedFile {
  path: string;
  text: string;
  kind: DefinitionKind;
  name: string;
  /** The owner folder: the agent of an agent's own skill, the suite of a benchmark task. */
  scope?: string;
  /** The YAML value (the front matter of a Markdown kind); undefined when it could not be read. */
  value: unknown;
  frontMatter?: FrontMatter;
  at: Locate;
}

/** Parses one file; problems that stop it from being read come back as diagnostics. */
export function parseFile(path: string, text: string, kind: DefinitionKind, name: string, scope?: string): { file: ParsedFile; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const error = (line: number, column: number, code: string, message: string, pointer = '') =>
    diagnostics.push({ file: path, line, column, code, message, pointer, severity: 'error' });
  const unread = (at: Locate) => ({ file: { path, text, kind, name, scope, value: undefined, at }, diagnostics });
  const markdown = isMarkdownKind(kind);

  if (Buffer.byteLength(text) > MAX_FILE_BYTES) {
    error(1, 1, 'file.too_large', `file is ${Buffer.byteLength(text)} bytes; definitions files may be at most ${MAX_FILE_BYTES} bytes (1 MiB)`);
    return unread(() => ({ line: 1, column: 1 }));
  }

  // A BOM is allowed (docs/definitions.md#rules) and takes no column: an editor shows the first key at 1.
  let yamlText = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let frontMatter: FrontMatter | undefined;
  if (markdown) {
    frontMatter = splitFrontMatter(text, kind);
    if (frontMatter.problem) {
      const { line, code, message } = frontMatter.problem;
      error(line, 1, code, message);
      return unread(() => ({ line, column: 1 }));
    }
    yamlText = yamlOf(frontMatter);
  }

  // Plain YAML is read without positions; the first diagnostic of such a file parses it again with
  // them, so a diagnostic says the same either way (docs/architecture.md#compile-speed).
  const plain = readPlainYaml(yamlText);
  const parsed: ParsedYaml | undefined = plain === undefined ? parseYaml(yamlText) : undefined;
  const at = locator(yamlText, frontMatter?.bodyLine, parsed);
  if (parsed !== undefined) {
    for (const p of parsed.problems) {
      const pos = toPosition(parsed, p.offset);
      error(pos.line, pos.column, p.code, p.message);
    }
    if (parsed.problems.length) return unread(at);
  }

  // An empty front matter is an empty mapping (the schema then names the missing keys).
  let value = plain === undefined ? parsed!.value : plain.value;
  if (markdown && (value === null || value === undefined)) value = {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const what = value === null || value === undefined ? 'empty' : Array.isArray(value) ? 'a list' : `a ${typeof value}`;
    const pos = at('');
    error(pos.line, pos.column, 'yaml.not_a_mapping', `expected a mapping of keys (key: value), but the ${markdown ? 'front matter' : 'file'} is ${what}`);
    return unread(at);
  }
  // A string no request can carry (NUL, an unpaired surrogate) is reported here, at its place,
  // not later as a plan refused at a snapshot pointer (docs/diagnostics.md).
  for (const { pointer, what } of unstorableText(value)) {
    const pos = at(pointer);
    error(pos.line, pos.column, 'yaml.invalid_text', `this ${what}, which no definition can hold: the runtime refuses it in any request`, pointer);
  }
  if (frontMatter) {
    const odd = unstorable(promptOf(frontMatter.body));
    if (odd) error(frontMatter.bodyLine, 1, 'yaml.invalid_text', `the prompt has ${odd}, which no definition can hold: the runtime refuses it in any request`, '/prompt');
  }
  // Like a YAML problem, it stops the file here: the later checks would only say it again.
  if (diagnostics.length) return unread(at);
  return { file: { path, text, kind, name, scope, value, frontMatter, at }, diagnostics };
}

/** Every key and string of a parsed value that `unstorable` refuses, with its JSON pointer. */
function unstorableText(root: unknown): { pointer: string; what: string }[] {
  const out: { pointer: string; what: string }[] = [];
  walkJson(root, {
    value(value, pointer) {
      const odd = typeof value === 'string' ? unstorable(value) : undefined;
      if (odd) out.push({ pointer, what: `value has ${odd}` });
    },
    key(key, _parent, pointer) {
      const odd = unstorable(key);
      if (!odd) return undefined;
      out.push({ pointer, what: `key has ${odd}` });
      return 'skip';
    },
  });
  return out.reverse();
}

/**
 * The positions of one file's YAML (`bodyLine` for a Markdown kind's `/prompt`), from `parsed`, or
 * from a parse made on the first call when the file was read without positions. Built apart from
 * parseFile so that the closure, kept with every file, holds only these.
 */
function locator(yamlText: string, bodyLine: number | undefined, parsed: ParsedYaml | undefined): Locate {
  return (pointer, mode) => {
    if (bodyLine !== undefined && pointer === '/prompt') return { line: bodyLine, column: 1 };
    parsed ??= parseYaml(yamlText);
    return positionOf(parsed, pointer, mode);
  };
}
