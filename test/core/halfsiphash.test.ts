import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { halfSipHash, halfSipHashLines, halfSipHashText, halfSipKey } from '../../core/halfsiphash.ts';

// The reference implementation's vectors for HalfSipHash-2-4 with a 32-bit result: key 00..07, the
// message of length i the bytes 00..i-1 (lengths 0 to 20: every tail length, several words).
const VECTORS = [
  0x5b9f35a9, 0xb85a4727, 0x03a662fa, 0x04e7fe8a, 0x89466e2a, 0x69b6fac5, 0x23fc6358, 0xc563cf8b, 0x8f84b8d0, 0x79e706f8, 0x3479b094,
  0x50300808, 0x2f87f057, 0xff63e677, 0x7cf8ffd6, 0x972bfe74, 0x84acb5d9, 0x5b6474c4, 0x9b8d5b46, 0x87e3ef7b, 0x45104de3,
];

test('halfSipHash gives the reference vectors', () => {
  const key = halfSipKey(Uint8Array.from({ length: 8 }, (_, i) => i));
  const message = Uint8Array.from({ length: VECTORS.length }, (_, i) => i);
  VECTORS.forEach((expected, i) => assert.equal(halfSipHash(key, message.subarray(0, i)), expected, `length ${i}`));
});

test('halfSipHashText is halfSipHash of the text as UTF-16LE bytes, for every length and any code unit', () => {
  const key = halfSipKey(randomBytes(8));
  const texts = ['', 'a', 'ab', 'abc', 'wh_1\n6f1c2d3e-0000-4000-8000-000000000000', 'é😀\u0000\uffff', String.fromCharCode(0xd800)];
  for (let n = 0; n < 40; n++) texts.push(Array.from({ length: n }, () => String.fromCharCode(randomBytes(2).readUInt16LE(0))).join(''));
  for (const text of texts) assert.equal(halfSipHashText(key, text), halfSipHash(key, Buffer.from(text, 'utf16le')), JSON.stringify(text));
});

test('halfSipHashLines is halfSipHashText of the two texts joined by a newline, at any length', () => {
  const key = halfSipKey(randomBytes(8));
  for (const [first, second] of [['', ''], ['wh_1', 'd'], ['wh_1', 'de'], ['x'.repeat(300), 'y'.repeat(701)], ['a', 'é😀'.repeat(5000)]]) {
    assert.equal(halfSipHashLines(key, first, second), halfSipHashText(key, `${first}\n${second}`), `${first.length}+${second.length}`);
  }
  // After a long text, a short one is hashed from its own units only.
  assert.equal(halfSipHashLines(key, 'wh_1', 'd1'), halfSipHash(key, Buffer.from('wh_1\nd1', 'utf16le')));
});

test('halfSipHash depends on the key and on every byte', () => {
  const a = halfSipKey(Buffer.from('0001020304050607', 'hex'));
  const b = halfSipKey(Buffer.from('0001020304050608', 'hex'));
  assert.notEqual(halfSipHashText(a, 'wh_1\nd1'), halfSipHashText(b, 'wh_1\nd1'));
  assert.notEqual(halfSipHashText(a, 'wh_1\nd1'), halfSipHashText(a, 'wh_1\nd2'));
  assert.throws(() => halfSipKey(new Uint8Array(16)), RangeError);
});
