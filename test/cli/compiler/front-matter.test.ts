import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import matter from 'gray-matter';
import { splitFrontMatter, type FrontMatter } from '../../../cli/compiler/front-matter.ts';
import type { MarkdownKind } from '../../../cli/compiler/paths.ts';

/** The split as gray-matter makes it, after the same checks of the fences: what splitFrontMatter must equal. */
function throughGrayMatter(text: string, kind: MarkdownKind): FrontMatter {
  const t = text.startsWith('\ufeff') ? text.slice(1) : text;
  const lines = t.split('\n').map((l) => l.replace(/\r$/, ''));
  const split = splitFrontMatter(text, kind);
  if (lines[0].trimEnd() !== '---' || lines.findIndex((l, i) => i > 0 && l.trimEnd() === '---') < 0) {
    // The refusals are checked by the compiler's tests; here only that they are refusals.
    assert.ok(split.problem !== undefined || (kind === 'agent' && split.yaml === '' && split.body === t), JSON.stringify(text));
    return split;
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
  return { yaml: captured, body, bodyLine: t.slice(0, bodyOffset).split('\n').length };
}

test('a Markdown file splits into front matter and body as gray-matter splits it', () => {
  const pieces = ['---', '--- ', '---\r', '----', '---js', '---x: 1', '# c', '  # c', '#', 'a: 1', 'b: [x]', '', ' ', '\r', 'body', 'more body', '\ufeff---', '\u00a0'];
  const text = fc.tuple(fc.boolean(), fc.array(fc.constantFrom(...pieces), { maxLength: 8 }), fc.constantFrom('\n', '\r\n')).map(([bom, lines, eol]) => (bom ? '\ufeff' : '') + lines.join(eol));
  const kind = fc.constantFrom<MarkdownKind>('automation', 'agent', 'skill', 'scorer');
  let split = 0;
  fc.assert(
    fc.property(text, kind, (t, k) => {
      const got = splitFrontMatter(t, k);
      assert.deepEqual(got, throughGrayMatter(t, k), JSON.stringify(t));
      if (!got.problem && got.yaml !== '') split++;
    }),
    { numRuns: 5000, seed: 20261123 },
  );
  assert.ok(split > 100, `only ${split} texts had front matter`);
});

test('the front matter keeps the file\'s line numbers and the body starts after the closing fence', () => {
  assert.deepEqual(splitFrontMatter('---\ntitle: x\n---\nHello\n'), { yaml: '\ntitle: x', body: 'Hello\n', bodyLine: 4 });
  assert.deepEqual(splitFrontMatter('---\r\ntitle: x\r\n---\r\n\r\nHi'), { yaml: '\r\ntitle: x\r', body: '\r\nHi', bodyLine: 4 });
  assert.deepEqual(splitFrontMatter('---\n# only a comment\n---\nHi'), { yaml: '', body: 'Hi', bodyLine: 4 });
});
