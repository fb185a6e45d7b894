import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { readPlainYaml } from '../../../cli/compiler/yaml-fast.ts';
import { parseYaml } from '../../../cli/compiler/yaml.ts';
import { splitFrontMatter } from '../../../cli/compiler/front-matter.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** The fast reader may give up, but when it answers, yaml reads the text without a problem and to the same value. */
function agrees(text: string): boolean {
  const fast = readPlainYaml(text);
  if (fast === undefined) return false;
  const full = parseYaml(text);
  assert.deepEqual(full.problems, [], `yaml finds a problem the fast reader missed in ${JSON.stringify(text)}`);
  assert.deepStrictEqual(fast.value, full.value, `different values for ${JSON.stringify(text)}`);
  return true;
}

test('the fast reader reads the plain YAML definitions are written in, to the value yaml reads', () => {
  const texts = [
    'name: bench\n',
    'authMode: token\nsecretName: hook-0-token\nuid: wh_benchaaaaaaaaaaaaaaaaaaaaa\n',
    '\ntitle: Automation 1\nenvironment: sandbox\ntriggers:\n  - provider: webhook\n    event: received\n    filter:\n      webhook_ids: [wh_benchaaaaaaaaaaaaaaaaaaaaa]\n      payload:\n        action: [opened, reopened]\n        pull_request: {base: {ref: main}, draft: false}\n        labels: {name: {not_in: [wip]}}\n',
    'agent:\n  command: [claude, -p, --output-format, stream-json, --verbose]\n  timeout: 30m\n',
    '# a comment\nkey: value # trailing\nlist:\n- a\n- b\nempty:\nother: ~\nn: 42\nneg: -7\nyes: true\nq: "double"\ns: \'it\'\'s\'\n',
    'a:\n  - x: 1\n    y:\n    - 2\n    z: [ ]\n  -\n    w: {}\nb: a#b\nc: x, y [z]\nd: café\ne: \u00a0\n',
  ];
  for (const text of texts) assert.ok(agrees(text), `the fast reader gave up on ${JSON.stringify(text)}`);
});

test('the fast reader gives up on what only yaml reads right', () => {
  const texts = [
    'a: &x 1\nb: *x\n', 'a: !!str 1\n', 'a: |\n  x\n', 'a: >-\n  x\n', 'a: b\n  c\n', 'a: 1\na: 2\n', '<<: {a: 1}\n',
    'a: 0x1f\n', 'a: 1.5\n', 'a: .inf\n', 'a: 1e3\n', 'a: 0o7\n', 'a:\tb\n', 'a: "x\\ty"\n', '---\na: 1\n', 'a: 1\n---\nb: 2\n',
    'a: [1,\n  2]\n', 'a: b: c\n', '  a: 1\n', 'a:\n  - 1\n  b: 2\n', 'a: {b}\n', 'a: [b: c]\n', 'true: 1\n', '1: a\n', '"a": 1\n',
    '__proto__: 1\n', 'a: 1\r\nb: 2\r\n', '\ufeffa: 1\n', '%YAML 1.2\n---\na: 1\n', 'a:\n- b\n c\n', '- a\nb: 1\n',
  ];
  for (const text of texts) assert.equal(readPlainYaml(text), undefined, JSON.stringify(text));
});

/** Every YAML file and Markdown front matter in the repo's examples and fixtures. */
function repoYamlTexts(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (/\.ya?ml$/.test(e.name)) out.push({ file: relative(ROOT, full), text: readFileSync(full, 'utf8') });
      else if (e.name.endsWith('.md')) {
        const fm = splitFrontMatter(readFileSync(full, 'utf8'), 'agent');
        if (!fm.problem) out.push({ file: relative(ROOT, full), text: fm.yaml });
      }
    }
  };
  walk(join(ROOT, 'examples'));
  walk(join(ROOT, 'test', 'fixtures'));
  return out;
}

test('on the examples and fixtures, the fast reader agrees with yaml and reads most of them', () => {
  const texts = repoYamlTexts();
  const read = texts.filter(({ text }) => agrees(text));
  assert.ok(texts.length > 20, `found only ${texts.length} YAML texts`);
  assert.ok(read.length * 4 > texts.length * 3, `the fast reader read only ${read.length} of ${texts.length}`);
});

/** Pieces of plain, near-plain and not-plain YAML, so that both answers come up often. */
const KEYS = ['a', 'b', 'key', 'a.b', 'x-y', '_', 'k1', '1', 'true', 'null', '~', '"q"', "'s'", '<<', '__proto__', 'a b', '-a', '0o7', '1e3'];
const PLAIN_VALUES = ['v', 'two words', '1', '-1', '+2', '007', 'true', 'False', 'null', '~', 'a # c', 'a#b', 'a:b', 'a :b', "'q'", "'it''s'", '""', '"a #b"', 'café', '-p', '[]', '{}'];
const VALUES = [
  ...PLAIN_VALUES, '', '1.5', '.5', '1e3', '0x1F', '0o17', '.inf', '.NaN', 'yes', 'a: b', 'x:', '[a, b]', '[a,b]', '[ ]', '[a, [b, c]]', '[a, {b: c}]',
  '{a: b}', '{a: b, c: [d]}', '{a: b, a: c}', '{a:b}', '{ a: b }', '{a: }', '[a, ]', '[-p, --x]', '[-]', '[a: b]', '[#a]', "''", '"d"', "'a' b", '"a',
  '&x v', '*x', '!t v', '|', '>-', '- a', '-', '? a', '@a', '`a`', '%a', 'a\tb', 'a\\b', 'é: x', '[a] # c', '[a]#c', '{a: [b]} x', '\u00a0', '\u2028',
];

type Tree = string | { map: [string, Tree][] } | { seq: Tree[] };

/** Block YAML of a tree: mappings and sequences at two spaces a level, a sequence under a key at the key's own indentation or deeper. */
function render(tree: Tree, indent: number, flatSeq: boolean): string[] {
  const pad = ' '.repeat(indent);
  if (typeof tree === 'string') return [pad + tree];
  if ('map' in tree) {
    return tree.map.flatMap(([k, v]) => {
      if (typeof v === 'string') return [`${pad}${k}: ${v}`];
      return [`${pad}${k}:`, ...render(v, 'seq' in v && flatSeq ? indent : indent + 2, flatSeq)];
    });
  }
  return tree.seq.flatMap((v) => {
    if (typeof v === 'string') return [`${pad}- ${v}`];
    const [first = '', ...rest] = render(v, indent + 2, flatSeq);
    return 'map' in v && v.map.length > 0 ? [`${pad}- ${first.slice(indent + 2)}`, ...rest] : [`${pad}-`, first, ...rest];
  });
}

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree; map: Tree }>((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constantFrom(...PLAIN_VALUES), tie('map'), fc.array(tie('tree'), { minLength: 1, maxLength: 3 }).map((seq) => ({ seq }))),
  map: fc.uniqueArray(fc.tuple(fc.constantFrom(...KEYS.slice(0, 7)), tie('tree')), { minLength: 1, maxLength: 4, selector: ([k]) => k }).map((map) => ({ map })),
})).map;

/** A rendered tree, then a few edits: a line re-indented, a value or key swapped for any piece, a comment or blank line added. */
const document = fc
  .tuple(
    tree,
    fc.boolean(),
    fc.array(fc.tuple(fc.nat(), fc.constantFrom('indent', 'value', 'key', 'comment', 'blank', 'none', 'none'), fc.integer({ min: 0, max: 5 }), fc.constantFrom(...VALUES), fc.constantFrom(...KEYS)), { maxLength: 3 }),
  )
  .map(([t, flatSeq, edits]) => {
    const lines = render(t, 0, flatSeq);
    for (const [at, edit, n, value, key] of edits) {
      const i = at % lines.length;
      const indent = lines[i].length - lines[i].trimStart().length;
      if (edit === 'indent') lines[i] = ' '.repeat(n) + lines[i].trimStart();
      else if (edit === 'value') lines[i] = lines[i].replace(/(: |- |^ *)[^:]*$/, (_, lead: string) => lead + value);
      else if (edit === 'key') lines[i] = lines[i].replace(/^( *(?:- )?)[^:]+:/, (_, lead: string) => `${lead}${key}:`);
      else if (edit === 'comment') lines.splice(i, 0, ' '.repeat(n) + '# ' + value);
      else if (edit === 'blank') lines.splice(i, 0, ' '.repeat(indent));
    }
    return lines.join('\n') + '\n';
  });

test('on generated YAML, the fast reader answers only when it agrees with yaml', () => {
  let answered = 0;
  let runs = 0;
  fc.assert(
    fc.property(document, (text) => {
      runs++;
      if (agrees(text)) answered++;
    }),
    { numRuns: 5000, seed: 20261123 },
  );
  // A reader that always gave up would pass the property without checking anything.
  assert.ok(answered * 3 > runs, `the fast reader answered only ${answered} of ${runs} times`);
  assert.ok(answered * 10 < runs * 9, `the fast reader answered ${answered} of ${runs} times: the edits hardly make texts it must give up on`);
});
