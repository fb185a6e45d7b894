import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { halfSipHashLines, halfSipKey, type HalfSipKey } from '../../core/halfsiphash.ts';

/**
 * HalfSipHash-2-4, 32-bit result, over bytes, written plainly after the reference implementation:
 * the oracle the runtime's unrolled form over text is checked against.
 */
function halfSipHash([k0, k1]: HalfSipKey, data: Uint8Array): number {
  const v = new Uint32Array([k0, k1, 0x6c796765 ^ k0, 0x74656462 ^ k1]);
  const rotl = (x: number, n: number) => (x << n) | (x >>> (32 - n));
  const round = () => {
    v[0] += v[1]; v[1] = rotl(v[1], 5) ^ v[0]; v[0] = rotl(v[0], 16);
    v[2] += v[3]; v[3] = rotl(v[3], 8) ^ v[2];
    v[0] += v[3]; v[3] = rotl(v[3], 7) ^ v[0];
    v[2] += v[1]; v[1] = rotl(v[1], 13) ^ v[2]; v[2] = rotl(v[2], 16);
  };
  const compress = (m: number) => {
    v[3] ^= m;
    round();
    round();
    v[0] ^= m;
  };
  const end = data.length - (data.length & 3);
  for (let i = 0; i < end; i += 4) compress(data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24));
  let b = data.length << 24;
  for (let i = data.length - 1; i >= end; i--) b |= data[i] << (8 * (i - end));
  compress(b);
  v[2] ^= 0xff;
  for (let r = 0; r < 4; r++) round();
  return (v[1] ^ v[3]) >>> 0;
}

const halfSipHashText = (key: HalfSipKey, text: string) => halfSipHashLines(key, text, undefined);

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
