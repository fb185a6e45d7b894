/**
 * Edit distance for "did you mean" hints on unknown keys (docs/definitions.md): Levenshtein, plus a
 * swap of two neighbouring letters as one edit (agnet → agent), the most common typo.
 */
export function levenshtein(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cur[j] = Math.min(cur[j], before[j - 2] + 1);
    }
    before = prev;
    prev = cur;
  }
  return prev[b.length];
}

/**
 * The closest candidate when it is close enough to be a typo: the same letters ignoring case,
 * `-` and `_` (auth_mode → authMode), or within a third of the length (at least 1, at most 3).
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, '');
  const same = candidates.find((c) => norm(c) === norm(word));
  if (same) return same;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  return bestDistance <= limit ? best : undefined;
}
