import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';
import type { DefinitionKind } from '../../core/schemas.ts';

export type { DefinitionKind };

/** Kinds whose file is Markdown with YAML front matter (the body is a prompt, instructions or a rubric). */
const MARKDOWN_KINDS = ['automation', 'agent', 'skill', 'scorer'] as const satisfies readonly DefinitionKind[];
export type MarkdownKind = (typeof MARKDOWN_KINDS)[number];
export const isMarkdownKind = (kind: string): kind is MarkdownKind => (MARKDOWN_KINDS as readonly string[]).includes(kind);

/** What a repo-relative path is to the compiler (docs/definitions.md#warps-layout). */
export type PathClass =
  /** `scope` is the owner folder: the agent of an agent's own skill, the suite of a benchmark task. */
  | { kind: DefinitionKind; name: string; scope?: string }
  /** A file in a definitions directory that the compiler does not read: a warning. */
  | { kind: 'unexpected'; hint: string }
  /** Anything else (README, dotfiles, files next to a folder-form definition): not read. */
  | { kind: 'ignored' };

export const DEFINITION_DIRS = ['webhooks', 'automations', 'environments', 'agents', 'skills', 'runners', 'benchmarks', 'scorers'] as const;

/**
 * How many directory levels below a definitions directory the loader enters: agents/<a>/skills/<s>/
 * is three, benchmarks/<suite>/tasks/ two, the others one (<name>/ folders).
 */
export function dirDepth(top: string): number {
  return top === 'agents' ? 3 : top === 'benchmarks' ? 2 : 1;
}

const yamlFile = (dir: string, a: string): PathClass | undefined => {
  if (a.endsWith('.yaml')) return undefined;
  const hint = a.endsWith('.yml') ? `; rename it to ${a.slice(0, -4)}.yaml` : '';
  return { kind: 'unexpected', hint: `${dir}/ holds <name>.yaml files${hint}` };
};

/**
 * Classifies a path. Names come from the path, never from a field; whether the name is valid is
 * checked by the compiler (file.invalid_name), so a bad name still gets its file's diagnostics.
 */
export function classifyPath(path: string): PathClass {
  const parts = path.split('/');
  if (parts.some((p) => p.startsWith('.'))) return { kind: 'ignored' };
  if (path === 'factory.yaml') return { kind: 'factory', name: '' };
  const [dir, a, b, c, d] = parts;
  if (dir === 'webhooks' || dir === 'environments' || dir === 'runners') {
    if (parts.length !== 2) return { kind: 'unexpected', hint: `${dir}/ holds <name>.yaml files, not subdirectories` };
    const kind = dir === 'webhooks' ? 'webhook' : dir === 'environments' ? 'environment' : 'runner';
    return yamlFile(dir, a) ?? { kind, name: a.slice(0, -5) };
  }
  if (dir === 'automations') {
    if (parts.length === 2) {
      if (a.endsWith('.md')) return { kind: 'automation', name: a.slice(0, -3) };
      return { kind: 'unexpected', hint: 'automations/ holds <name>.md files and <name>/automation.md folders' };
    }
    if (parts.length === 3 && b === 'automation.md') return { kind: 'automation', name: a };
    // The loader lists a folder itself (`automations/<name>/`) only when it holds no automation.md.
    if (parts.length === 3 && b === '') {
      return { kind: 'unexpected', hint: `this folder holds no automation.md (lowercase), so it defines no automation; an apply would delete automation '${a}' if it exists` };
    }
    // Other files in an automation's folder are the author's own (notes, examples).
    return { kind: 'ignored' };
  }
  // The loader lists a definition folder itself (`agents/<name>/`) only when it lacks its file.
  const missing = path.endsWith('/') ? expectedDefinitionFile(path.slice(0, -1)) : undefined;
  if (missing) return { kind: 'unexpected', hint: `this folder holds no ${missing} (exactly so named), so it defines nothing` };
  if (dir === 'agents') {
    if (parts.length === 2) return { kind: 'unexpected', hint: 'agents/ holds <name>/agent.md folders' };
    if (parts.length === 3 && b === 'agent.md') return { kind: 'agent', name: a };
    if (parts.length === 5 && b === 'skills' && d === 'SKILL.md') return { kind: 'skill', name: c, scope: a };
    // Other files of an agent's folder (and a skill's scripts or references) are the author's own.
    return { kind: 'ignored' };
  }
  if (dir === 'skills' || dir === 'scorers') {
    const file = dir === 'skills' ? 'SKILL.md' : 'scorer.md';
    if (parts.length === 2) return { kind: 'unexpected', hint: `${dir}/ holds <name>/${file} folders` };
    if (parts.length === 3 && b === file) return { kind: dir === 'skills' ? 'skill' : 'scorer', name: a };
    return { kind: 'ignored' };
  }
  if (dir === 'benchmarks') {
    if (parts.length === 2) return { kind: 'unexpected', hint: 'benchmarks/ holds <suite>/suite.yaml folders' };
    if (parts.length === 3 && b === 'suite.yaml') return { kind: 'benchmark', name: a };
    if (parts.length === 4 && b === 'tasks') return yamlFile(`benchmarks/${a}/tasks`, c) ?? { kind: 'benchmark_task', name: c.slice(0, -5), scope: a };
    return { kind: 'ignored' };
  }
  return { kind: 'ignored' };
}

/**
 * The file a definition folder must hold (`agents/<name>/` → `agent.md`), or undefined when
 * `folder` (a repo-relative path, no trailing slash) is not one. A folder without it (`Agent.md`,
 * a typo, an empty folder) defines nothing, which the loader says instead of skipping it.
 */
export function expectedDefinitionFile(folder: string): string | undefined {
  const parts = folder.split('/');
  const [dir] = parts;
  if (parts.length === 2) {
    return { automations: 'automation.md', agents: 'agent.md', skills: 'SKILL.md', scorers: 'scorer.md', benchmarks: 'suite.yaml' }[dir];
  }
  if (parts.length === 4 && dir === 'agents' && parts[2] === 'skills') return 'SKILL.md';
  return undefined;
}

export const isValidName = (name: string) => RESOURCE_NAME_PATTERN.test(name);
