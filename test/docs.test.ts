import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repo's docs stand on their own: nothing cites a document users do not have, and every
 * relative link and every docs/<file>.md#<anchor> reference points at a file and a heading that
 * exist.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The files of the repo (`git ls-files`), as they are in the work tree. */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  return [...new Set(out.split('\0').filter(Boolean))].filter((f) => {
    const abs = path.join(ROOT, f);
    return existsSync(abs) && statSync(abs).isFile();
  });
}

/** Text files only: a NUL byte marks a binary. */
function readText(file: string): string | undefined {
  const buf = readFileSync(path.join(ROOT, file));
  return buf.includes(0) ? undefined : buf.toString('utf8');
}

// Built from pieces so that this file does not match itself. The contract's and the guide's names
// as words in capitals, except quoted (the agent type 'SPEC' is a value of the schema), their file
// names in any case, and paths into the material the repo was written from.
const CONTRACT = 'SP' + 'EC';
const GUIDE = 'ST' + 'YLE';
const Q = '[\'"`]';
const FORBIDDEN = [
  new RegExp(`(?<!${Q})\\b(?:${CONTRACT}|${GUIDE})\\b(?!${Q})`),
  new RegExp(`\\b(?:${CONTRACT}|${GUIDE})\\.md\\b`, 'i'),
  new RegExp(['sha' + 'red/', 'provider-' + 'signatures', 'reference/' + 'payloads'].join('|')),
];
const forbidden = (line: string) => FORBIDDEN.some((re) => re.test(line));

test('the citation check catches what it is for and lets the agent type through', () => {
  for (const line of [`see ${CONTRACT}.md`, `${GUIDE.toLowerCase()}.md says`, `per the ${CONTRACT}`, `${GUIDE} 3`, `(${CONTRACT} 4.2)`, `${CONTRACT}§4`, 'sha' + 'red/seed', 'reference/' + 'payloads/github']) {
    assert.ok(forbidden(line), line);
  }
  for (const line of [`'${CONTRACT}',`, `"${CONTRACT}"`, `\`${CONTRACT}\``, 'a spec of the run', 'style.css']) assert.ok(!forbidden(line), line);
});

test('no file cites the product contract, the style guide or files outside the repo', () => {
  const hits: string[] = [];
  for (const file of repoFiles()) {
    const text = readText(file);
    if (text === undefined) continue;
    text.split('\n').forEach((line, i) => {
      if (forbidden(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  assert.deepEqual(hits, [], `cite docs/ instead:\n${hits.join('\n')}`);
});

/** GitHub's heading anchor: lowercase, punctuation dropped except - and _, spaces to -. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (outside fenced code), with GitHub's -1, -2 for repeats. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === null) fence = f[1][0];
      else if (f[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown without fenced blocks and inline code spans, where links are not links. */
function withoutCode(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split('\n').map((line) => {
    const f = /^\s*(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === null) fence = f[1][0];
      else if (f[1][0] === fence) fence = null;
      return '';
    }
    return fence !== null ? '' : line.replace(/`[^`]*`/g, '');
  });
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(file: string): Set<string> {
  let a = anchorCache.get(file);
  if (!a) anchorCache.set(file, (a = anchorsOf(readFileSync(path.join(ROOT, file), 'utf8'))));
  return a;
}

/** Why `target#anchor`, relative to the repo root, is broken; undefined when it is fine. */
function brokenTarget(target: string, anchor: string | undefined): string | undefined {
  const abs = path.join(ROOT, target);
  if (!existsSync(abs)) return 'no such file';
  if (anchor === undefined || anchor === '') return undefined;
  if (!target.endsWith('.md')) return undefined;
  return anchorsOfFile(target).has(anchor) ? undefined : `no heading with the anchor #${anchor}`;
}

test('relative links in README.md and docs/ point at existing files and headings', () => {
  const files = repoFiles().filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md')));
  assert.ok(files.includes('docs/runs.md'));
  const problems: string[] = [];
  let checked = 0;
  for (const file of files) {
    const lines = withoutCode(readFileSync(path.join(ROOT, file), 'utf8'));
    lines.forEach((line, i) => {
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
        const [p, anchor] = link.split('#', 2);
        const target = p === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), p));
        const why = brokenTarget(target, anchor);
        checked++;
        if (why) problems.push(`${file}:${i + 1}: ${link}: ${why}`);
      }
    });
  }
  // The docs link to each other a lot: finding none means the link pattern no longer reads them.
  assert.ok(checked > 20, `only ${checked} relative links found`);
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('docs/<file>.md#<anchor> references in code, tests and docs name existing headings', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const file of repoFiles()) {
    const text = readText(file);
    if (text === undefined) continue;
    text.split('\n').forEach((line, i) => {
      for (const m of line.matchAll(/(?<![\w/.-])((?:docs\/[\w.-]+\.md)|README\.md)#([\w-]+)/g)) {
        const why = brokenTarget(m[1], m[2]);
        checked++;
        if (why) problems.push(`${file}:${i + 1}: ${m[1]}#${m[2]}: ${why}`);
      }
    });
  }
  // Code and tests cite docs/<file>.md#<anchor> throughout: finding none means the pattern broke.
  assert.ok(checked > 20, `only ${checked} docs/<file>.md#<anchor> references found`);
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('the slug follows GitHub: punctuation dropped, spaces to dashes', () => {
  assert.equal(slug('The pipeline, step by step'), 'the-pipeline-step-by-step');
  assert.equal(slug('Management API (scope `manage` for the webhook\'s factory)'), 'management-api-scope-manage-for-the-webhooks-factory');
  assert.equal(slug('Listing automations; silent automations'), 'listing-automations-silent-automations');
  assert.equal(slug('snake_case and kebab-case'), 'snake_case-and-kebab-case');
});
