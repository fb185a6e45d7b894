import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH } from '../../../core/json-depth.ts';
import { METADATA_MAX_BYTES, parseCreateRun } from '../../../runtime/routes/run-input.ts';

/** parseCreateRun on its own (docs/api.md): every problem comes back as data, whatever the value. */

const base = { prompt: 'x', config: { environment_id: 'agent' } };

function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

test('metadata nested 10,000 levels deep is a field error, not a thrown RangeError', () => {
  const result = parseCreateRun({ ...base, metadata: nested(10_000) });
  assert.equal(result.value, undefined);
  assert.deepEqual(result.errors.map((e) => e.pointer), ['/metadata']);
  assert.match(result.errors[0].message, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
});

test('metadata at the depth limit is accepted; the size limit still applies', () => {
  assert.ok(parseCreateRun({ ...base, metadata: nested(MAX_JSON_DEPTH) }).value);
  assert.equal(parseCreateRun({ ...base, metadata: nested(MAX_JSON_DEPTH + 1) }).value, undefined);
  const big = parseCreateRun({ ...base, metadata: { s: 'x'.repeat(METADATA_MAX_BYTES) } });
  assert.deepEqual(big.errors.map((e) => e.pointer), ['/metadata']);
});
