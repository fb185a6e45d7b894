/**
 * The definitions compiler (docs/definitions.md, docs/filters.md, docs/plan-apply.md): the public
 * API that commands and the runtime client use. compile() is pure; loadRepo() and compileDir() are
 * the thin disk edge.
 */
import { resolve } from 'node:path';
import { compile, type CompileResult, type SourceFile } from './compile.ts';
import { classifyPath, isMarkdownKind } from './paths.ts';
import { splitFrontMatter, yamlOf } from './front-matter.ts';
import { parseYaml, positionOf } from './yaml.ts';
import { loadRepo } from './loader.ts';
import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';

export { compile, type CompileOptions, type CompileResult, type SourceFile } from './compile.ts';
export { formatDiagnostics, sortDiagnostics, DIAGNOSTIC_CODES, type Diagnostic } from './diagnostics.ts';
export { writeSnapshot, resolveRepoUrl } from './build-snapshot.ts';
export { loadRepo } from './loader.ts';

/** loadRepo + compile, with the repo's absolute directory as root; `cwd` resolves a relative dir. */
export async function compileDir(dir: string, options: { cwd?: string } = {}): Promise<CompileResult> {
  return compile(await loadRepo(dir, options), { root: resolve(options.cwd ?? '.', dir) });
}

/**
 * The 1-based position of a JSON pointer in one file, for errors that plan/apply return as
 * `{file, pointer}`. For a Markdown kind the pointer is into the front matter, and `/prompt` is
 * the body. An unknown file or an unreadable one gives 1:1; a missing key gives its parent.
 */
export function locate(files: SourceFile[], file: string, pointer: string): { line: number; column: number } {
  const source = files.find((f) => f.path === file);
  if (!source) return { line: 1, column: 1 };
  const c = classifyPath(file);
  if (isMarkdownKind(c.kind)) {
    const fm = splitFrontMatter(source.text, c.kind);
    if (fm.problem) return { line: fm.problem.line, column: 1 };
    if (pointer === '/prompt') return { line: fm.bodyLine, column: 1 };
    return positionOf(parseYaml(yamlOf(fm)), pointer);
  }
  return positionOf(parseYaml(source.text), pointer);
}

/** The factory's name from factory.yaml, when it parses and is a valid name; else undefined. */
export function factoryNameOf(files: SourceFile[]): string | undefined {
  const source = files.find((f) => f.path === 'factory.yaml');
  if (!source) return undefined;
  const value: unknown = parseYaml(source.text).value;
  const name = value !== null && typeof value === 'object' ? (value as { name?: unknown }).name : undefined;
  return typeof name === 'string' && RESOURCE_NAME_PATTERN.test(name) ? name : undefined;
}
