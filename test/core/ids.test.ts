import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId, RUN_ID_PATTERN, WEBHOOK_UID_PATTERN } from '../../core/ids.ts';

test('ids have their shape and never repeat, across many refills of the random pool', () => {
  const seen = new Set<string>();
  // 17 bytes an id, 4 KB a pool: 10,000 ids draw the pool about 40 times over.
  for (let i = 0; i < 10_000; i++) {
    const id = newId(i % 2 ? 'run' : 'wh');
    assert.match(id, i % 2 ? RUN_ID_PATTERN : WEBHOOK_UID_PATTERN);
    seen.add(id.slice(id.indexOf('_') + 1));
  }
  assert.equal(seen.size, 10_000);
});

test('every base32 character appears at every position of an id (the bytes are not reused or stuck)', () => {
  const positions = Array.from({ length: 26 }, () => new Set<string>());
  for (let i = 0; i < 4_000; i++) {
    const body = newId('dlv').slice(4);
    for (let p = 0; p < 26; p++) positions[p].add(body[p]);
  }
  for (const [p, chars] of positions.entries()) assert.equal(chars.size, 32, `position ${p}`);
});
