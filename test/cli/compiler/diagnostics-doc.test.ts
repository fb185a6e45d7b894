import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DIAGNOSTIC_CODES } from '../../../cli/compiler/index.ts';

test('docs/diagnostics.md lists exactly the codes the compiler can emit', () => {
  const doc = readFileSync(resolve(import.meta.dirname, '../../../docs/diagnostics.md'), 'utf8');
  const documented = [...doc.matchAll(/^\| `([a-z_]+\.[a-z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual([...documented].sort(), [...DIAGNOSTIC_CODES].sort());
});

test('every code literal in the compiler sources is in the list', () => {
  const dir = resolve(import.meta.dirname, '../../../cli/compiler');
  for (const file of ['rules.ts', 'yaml.ts', 'front-matter.ts', 'parse-file.ts', 'compile.ts']) {
    const text = readFileSync(resolve(dir, file), 'utf8');
    for (const m of text.matchAll(/'((?:file|yaml|factory|webhook|automation|environment|repo|filter)\.[a-z_]+)'/g)) {
      if (m[1] !== 'factory.yaml') assert.ok((DIAGNOSTIC_CODES as readonly string[]).includes(m[1]), `${file}: ${m[1]}`);
    }
  }
});
