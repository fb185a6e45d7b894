import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, FactoryError } from '../../core/errors.ts';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'errors.md');

test('docs/errors.md lists exactly the codes of ERROR_CODES, with the same statuses', () => {
  const rows = [...readFileSync(DOC, 'utf8').matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
  const codes = Object.entries(ERROR_CODES).map(([code, def]) => [code, def.status]);
  assert.deepEqual(rows, codes, 'same codes, same statuses, same order');
});

test('FactoryError takes its status and title from the table; 429 and 5xx are retryable', () => {
  for (const [code, def] of Object.entries(ERROR_CODES)) {
    const e = new FactoryError(code as keyof typeof ERROR_CODES, 'x.');
    assert.equal(e.status, def.status);
    assert.equal(e.title, def.title);
    assert.equal(e.retryable, def.status >= 500 || def.status === 429);
  }
});
