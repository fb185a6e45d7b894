import matter from 'gray-matter';
import type { DiagnosticCode } from './diagnostics.ts';

/** An automation file split into its front matter text and its body (the prompt). */
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
 * Splits an automation file (SPEC 2) with gray-matter, whose YAML engine only captures the text:
 * the `yaml` package parses it later with positions (never js-yaml, whose timestamps would turn
 * dates into Date objects). The opening fence must be exactly `---`: gray-matter would otherwise
 * pick an engine from the fence (`---js` evaluates JavaScript), which a definitions file must
 * never do.
 */
export function splitFrontMatter(text: string): FrontMatter {
  const t = text.startsWith('\ufeff') ? text.slice(1) : text;
  const lines = t.split('\n').map((l) => l.replace(/\r$/, ''));
  if (lines[0].trimEnd() !== '---') {
    const problem = lines[0].startsWith('---')
      ? { code: 'automation.front_matter_language' as const, message: `the front matter fence must be '---' alone, not '${lines[0].trimEnd()}'; only YAML front matter is read`, line: 1 }
      : { code: 'automation.no_front_matter' as const, message: "an automation starts with YAML front matter between '---' lines (triggers, environment), then the prompt", line: 1 };
    return { yaml: '', body: t, bodyLine: 1, problem };
  }
  const close = lines.findIndex((l, i) => i > 0 && l.trimEnd() === '---');
  if (close < 0) {
    return {
      yaml: '',
      body: '',
      bodyLine: lines.length,
      problem: { code: 'automation.unclosed_front_matter', message: "the front matter has no closing '---' line", line: 1 },
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
