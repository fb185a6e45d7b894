import type { DiagnosticCode } from './diagnostics.ts';
import type { MarkdownKind } from './paths.ts';

const NO_FRONT_MATTER: Record<Exclude<MarkdownKind, 'agent'>, string> = {
  automation: "an automation starts with YAML front matter between '---' lines (triggers, environment or agent), then the prompt",
  skill: "a SKILL.md starts with YAML front matter between '---' lines (name, description), then the skill's instructions",
  scorer: "a scorer starts with YAML front matter between '---' lines (agents, labels, passingScore, model; name optional), then the rubric",
};

/** A Markdown definitions file split into its front matter text and its body. */
export interface FrontMatter {
  /**
   * The YAML between the fences, starting right after the opening `---`: its line numbers are
   * the file's own, so YAML positions need no offset.
   */
  yaml: string;
  body: string;
  /** 1-based line where the body starts. */
  bodyLine: number;
  problem?: { code: DiagnosticCode; message: string; line: number };
}

/**
 * Splits a Markdown definitions file (docs/definitions.md). The opening fence must be exactly
 * `---` (a fence such as `---js` would, in front-matter tools, pick a language whose parser runs
 * code, which a definitions file must never do); the YAML is parsed later, with positions, by the
 * compiler. The split is the one gray-matter makes of such a file, written out here because the
 * package copied every file into a Buffer and built its options for each
 * (docs/architecture.md#compile-speed): the front matter ends at the first line that starts with
 * `---`, and one that holds only comments counts as empty.
 */
export function splitFrontMatter(text: string, kind: MarkdownKind = 'automation'): FrontMatter {
  const t = text.startsWith('\ufeff') ? text.slice(1) : text;
  const firstEnd = t.indexOf('\n');
  const first = (firstEnd < 0 ? t : t.slice(0, firstEnd)).replace(/\r$/, '');
  if (first.trimEnd() !== '---') {
    if (first.startsWith('---')) {
      const message = `the front matter fence must be '---' alone, not '${first.trimEnd()}'; only YAML front matter is read`;
      return { yaml: '', body: t, bodyLine: 1, problem: { code: `${kind}.front_matter_language` as DiagnosticCode, message, line: 1 } };
    }
    // Every key of an agent is optional, so a plain Markdown agent.md is its instructions alone.
    if (kind === 'agent') return { yaml: '', body: t, bodyLine: 1 };
    return { yaml: '', body: t, bodyLine: 1, problem: { code: `${kind}.no_front_matter` as DiagnosticCode, message: NO_FRONT_MATTER[kind], line: 1 } };
  }
  if (!hasClosingFence(t, firstEnd)) {
    return {
      yaml: '',
      body: '',
      bodyLine: countLines(t, t.length),
      problem: { code: `${kind}.unclosed_front_matter` as DiagnosticCode, message: "the front matter has no closing '---' line", line: 1 },
    };
  }
  // The YAML starts right after the opening `---` (its line numbers are the file's own) and ends
  // before the first line that starts with `---`, which a closing fence line does.
  const close = t.indexOf('\n---', 3);
  const matter = t.slice(3, close);
  const yaml = matter.replace(/^\s*#[^\n]+/gm, '').trim() === '' ? '' : matter;
  let bodyStart = close + 4;
  if (t[bodyStart] === '\r') bodyStart++;
  if (t[bodyStart] === '\n') bodyStart++;
  return { yaml, body: t.slice(bodyStart), bodyLine: countLines(t, bodyStart) };
}

/**
 * The front matter as the YAML parser reads it: without the `\r` that a file with CRLF line ends
 * leaves before the closing fence (the split is gray-matter's, which keeps it). The YAML parser
 * takes a lone `\r` at the very end for content, so the last key of such a file read `value\r`,
 * or did not parse at all. Removing the last character moves no position.
 */
export function yamlOf(fm: FrontMatter): string {
  return fm.yaml.endsWith('\r') ? fm.yaml.slice(0, -1) : fm.yaml;
}

/** Whether a line after the first (which ends at `firstEnd`) is `---` alone, give or take trailing white space. */
function hasClosingFence(t: string, firstEnd: number): boolean {
  for (let start = firstEnd + 1; start > 0; ) {
    const end = t.indexOf('\n', start);
    const line = end < 0 ? t.slice(start) : t.slice(start, end);
    if (line.startsWith('---') && line.trimEnd() === '---') return true;
    start = end + 1;
  }
  return false;
}

/** The 1-based number of the line that offset `end` of `t` is on. */
function countLines(t: string, end: number): number {
  let n = 1;
  for (let i = t.indexOf('\n'); i >= 0 && i < end; i = t.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * The prompt as stored in the snapshot: the body without leading blank lines or trailing
 * whitespace, with CRLF line ends as LF, so a checkout's line-end setting does not change it.
 */
export function promptOf(body: string): string {
  return body.replace(/\r\n/g, '\n').replace(/^(?:[ \t]*\n)+/, '').trimEnd();
}
