import { RESOURCE_NAME_PATTERN } from '../../core/ids.ts';

export type DefinitionKind = 'factory' | 'webhook' | 'automation' | 'environment';

/** What a repo-relative path is to the compiler (SPEC 2). */
export type PathClass =
  | { kind: DefinitionKind; name: string }
  /** A file in a definitions directory that the compiler does not read: a warning. */
  | { kind: 'unexpected'; hint: string }
  /** Anything else (README, dotfiles, files next to a folder-form automation): not read. */
  | { kind: 'ignored' };

export const DEFINITION_DIRS = ['webhooks', 'automations', 'environments'] as const;

/**
 * Classifies a path. Names come from the path, never from a field; whether the name is valid is
 * checked by the compiler (file.invalid_name), so a bad name still gets its file's diagnostics.
 */
export function classifyPath(path: string): PathClass {
  const parts = path.split('/');
  if (parts.some((p) => p.startsWith('.'))) return { kind: 'ignored' };
  if (path === 'factory.yaml') return { kind: 'factory', name: '' };
  const [dir, a, b] = parts;
  if (parts.length === 2 && (dir === 'webhooks' || dir === 'environments')) {
    if (a.endsWith('.yaml')) return { kind: dir === 'webhooks' ? 'webhook' : 'environment', name: a.slice(0, -5) };
    const hint = a.endsWith('.yml') ? `; rename it to ${a.slice(0, -4)}.yaml` : '';
    return { kind: 'unexpected', hint: `${dir}/ holds <name>.yaml files${hint}` };
  }
  if (dir === 'automations') {
    if (parts.length === 2) {
      if (a.endsWith('.md')) return { kind: 'automation', name: a.slice(0, -3) };
      return { kind: 'unexpected', hint: 'automations/ holds <name>.md files and <name>/automation.md folders' };
    }
    if (parts.length === 3 && b === 'automation.md') return { kind: 'automation', name: a };
    // Other files in an automation's folder are the author's own (notes, examples).
    return { kind: 'ignored' };
  }
  if (dir === 'webhooks' || dir === 'environments') {
    return { kind: 'unexpected', hint: `${dir}/ holds <name>.yaml files, not subdirectories` };
  }
  return { kind: 'ignored' };
}

export const isValidName = (name: string) => RESOURCE_NAME_PATTERN.test(name);
