import { visible } from './terminal.ts';

/**
 * Formats rows as left-aligned columns separated by two spaces; the first row is the header.
 * Cells are made safe to print first (terminal.ts): they hold what the runtime answered.
 */
export function formatTable(cells: string[][]): string {
  const rows = cells.map((row) => row.map(visible));
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ').trimEnd() + '\n').join('');
}
