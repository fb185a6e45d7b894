import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CappedBuffer, truncateUtf8 } from '../../../runtime/executor/transcript.ts';

/** The byte budgets of a command's output (runtime/executor/transcript.ts, docs/runs.md#transcript). */

test('a capped buffer keeps at most its cap of UTF-8, also when invalid bytes decode to 3-byte replacement characters', () => {
  const buf = new CappedBuffer(1000);
  buf.push(Buffer.alloc(5000, 0xff));
  const text = buf.text();
  assert.ok(Buffer.byteLength(text) <= 1000, `${Buffer.byteLength(text)} bytes`);
  assert.equal(buf.truncated, true);
  assert.match(text, /^\ufffd+$/);
});

test('a capped buffer under its cap keeps everything, and says nothing was cut', () => {
  const buf = new CappedBuffer(1000);
  buf.push(Buffer.from('héllo\n'));
  assert.equal(buf.text(), 'héllo\n');
  assert.equal(buf.truncated, false);
  assert.deepEqual(truncateUtf8('é'.repeat(3), 5), { text: 'éé', truncated: true });
});
