import type { Snapshot } from '../../core/snapshot.ts';

/**
 * What `plan` prints after the changes: every key, trigger and file the snapshot records but this
 * runtime does not act on (docs/definitions.md#what-runs-here-and-what-is-only-checked), by file.
 */
export function renderInactive(snapshot: Snapshot): string {
  const items = snapshot.inactive ?? [];
  if (items.length === 0) return '';
  let out = 'Validated, not served by this runtime (docs/definitions.md#what-runs-here-and-what-is-only-checked):\n';
  let file = '';
  for (const i of items) {
    if (i.file !== file) {
      file = i.file;
      out += `  ${file}\n`;
    }
    out += `      ${i.pointer || '(the file)'}: ${i.reason}\n`;
  }
  return out;
}
