import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId, newSortableId, RUN_ID_PATTERN, WEBHOOK_UID_PATTERN } from '../../core/ids.ts';

/** The millisecond in a sortable id's first 10 characters, read back independently of core/ids.ts. */
function sortableIdTime(id: string): number {
  let t = 0;
  for (const c of id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11)) t = t * 32 + '234567abcdefghijklmnopqrstuvwxyz'.indexOf(c);
  return t;
}

test('ids have their shape and never repeat, across many refills of the random pool', () => {
  const seen = new Set<string>();
  // 17 bytes an id, 4 KB a pool: 10,000 ids draw the pool about 40 times over.
  for (let i = 0; i < 10_000; i++) {
    const id = i % 2 ? newSortableId('run', 1_764_000_000_000 + (i % 3)) : newId('wh');
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

test('run and message ids sort by the millisecond they were made in, keep the run id shape, and read back their time', () => {
  const times = [0, 1, 31, 32, 1_764_165_000_000, 1_764_165_000_001, 1_764_165_000_999, 2 ** 50 - 1];
  const ids = times.map((t) => newSortableId('run', t));
  for (const [i, id] of ids.entries()) {
    assert.match(id, RUN_ID_PATTERN);
    assert.equal(sortableIdTime(id), times[i]);
  }
  // Made in increasing milliseconds, in random order: sorting the ids gives the times back in order.
  const shuffled = ids.map((id, i) => ({ id, t: times[i] })).sort(() => Math.random() - 0.5);
  assert.deepEqual(shuffled.sort((a, b) => (a.id < b.id ? -1 : 1)).map((x) => x.t), times);
  assert.match(newSortableId('msg'), /^msg_[a-z2-7]{26}$/);
  assert.ok(Math.abs(sortableIdTime(newSortableId('run')) - Date.now()) < 60_000);
});

test('sortable ids of one millisecond differ in their 80 random bits, and each of those positions takes every character', () => {
  const positions = Array.from({ length: 16 }, () => new Set<string>());
  const seen = new Set<string>();
  for (let i = 0; i < 4_000; i++) {
    const id = newSortableId('run', 1_764_165_000_000);
    seen.add(id);
    for (let p = 0; p < 16; p++) positions[p].add(id[4 + 10 + p]);
  }
  assert.equal(seen.size, 4_000);
  for (const [p, chars] of positions.entries()) assert.equal(chars.size, 32, `random position ${p}`);
});
