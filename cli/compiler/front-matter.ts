import matter from 'gray-matter';
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
 * Splits a Markdown definitions file (docs/definitions.md) with gray-matter, whose YAML engine only
 * captures the text: the `yaml` package parses it later with positions (never js-yaml, whose
 * timestamps would turn dates into Date objects). The opening fence must be exactly `---`:
 * gray-matter would otherwise pick an engine from the fence (`---js` evaluates JavaScript), which a
 * definitions file must never do.
 */
export function splitFrontMatter(text: string, kind: MarkdownKind = 'automation'): FrontMatter {
  const t = text.startsWith('\ufeff') ? text.slice(1) : text;
  const lines = t.split('\n').map((l) => l.replace(/\r$/, ''));
  if (lines[0].trimEnd() !== '---') {
    if (lines[0].startsWith('---')) {
      const message = `the front matter fence must be '---' alone, not '${lines[0].trimEnd()}'; only YAML front matter is read`;
      return { yaml: '', body: t, bodyLine: 1, problem: { code: `${kind}.front_matter_language` as DiagnosticCode, message, line: 1 } };
    }
    // Every key of an agent is optional, so a plain Markdown agent.md is its instructions alone.
    if (kind === 'agent') return { yaml: '', body: t, bodyLine: 1 };
    return { yaml: '', body: t, bodyLine: 1, problem: { code: `${kind}.no_front_matter` as DiagnosticCode, message: NO_FRONT_MATTER[kind], line: 1 } };
  }
  const close = lines.findIndex((l, i) => i > 0 && l.trimEnd() === '---');
  if (close < 0) {
    return {
      yaml: '',
      body: '',
      bodyLine: lines.length,
      problem: { code: `${kind}.unclosed_front_matter` as DiagnosticCode, message: "the front matter has no closing '---' line", line: 1 },
    };
  }
  let captured = '';
  const file = matter(t, {
    language: 'yaml',
    engines: {
      yaml: (s: string) => {
        captured = s;
        return {};
      },
    },
  });
  const body = file.content;
  const bodyOffset = t.endsWith(body) ? t.length - body.length : t.length;
  const bodyLine = t.slice(0, bodyOffset).split('\n').length;
  return { yaml: captured, body, bodyLine };
}

/**
 * The prompt as stored in the snapshot: the body without leading blank lines or trailing
 * whitespace, with CRLF line ends as LF, so a checkout's line-end setting does not change it.
 */
export function promptOf(body: string): string {
  return body.replace(/\r\n/g, '\n').replace(/^(?:[ \t]*\n)+/, '').trimEnd();
}
