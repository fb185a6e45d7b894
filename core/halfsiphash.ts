/**
 * HalfSipHash-2-4 with a 32-bit result (Aumasson and Bernstein's SipHash family, the variant on
 * 32-bit words): a keyed hash that a sender who does not know the 64-bit key cannot steer, fast on
 * short inputs. The runtime keys its claims index in memory with it (runtime/store/claims.ts),
 * where Node's own hashes cost a few microseconds a call for the set-up of each digest.
 *
 * It hashes text as its UTF-16 code units' little-endian bytes, without encoding it first: the
 * value HalfSipHash gives `Buffer.from(text, 'utf16le')` (the tests check it against a byte-wise
 * form that gives the reference vectors).
 */

/** The key as two little-endian words, from 8 bytes. */
export type HalfSipKey = readonly [k0: number, k1: number];

export function halfSipKey(bytes: Uint8Array): HalfSipKey {
  if (bytes.length !== 8) throw new RangeError('a HalfSipHash key is 8 bytes');
  return [word(bytes, 0), word(bytes, 4)];
}

/**
 * The hash of `first + '\n' + second` without building that string (joining two texts and reading
 * the result's code units costs more than the hash). `second` undefined: `first` alone.
 */
export function halfSipHashLines(key: HalfSipKey, first: string, second: string | undefined): number {
  // The code units, laid out in a scratch buffer.
  const a = first.length;
  const n = second === undefined ? a : a + 1 + second.length;
  if (n > units.length) grow(n);
  const u = units;
  for (let i = 0; i < a; i++) u[i] = first.charCodeAt(i);
  if (second !== undefined) {
    u[a] = 10;
    for (let i = 0, b = second.length; i < b; i++) u[a + 1 + i] = second.charCodeAt(i);
  }
  const words = n >>> 1;
  // The rounds written out over local variables: this runs once per delivery.
  let v0 = key[0];
  let v1 = key[1];
  let v2 = 0x6c796765 ^ v0;
  let v3 = 0x74656462 ^ v1;
  // One pass per word, two rounds each; then one more pass, the finalization: four rounds.
  for (let i = 0; i <= words + 1; i++) {
    // 2n bytes: the last word holds the length and, for an odd count of units, the last unit.
    const m = i < words ? u[2 * i] | (u[2 * i + 1] << 16) : i === words ? ((2 * n) << 24) | (n & 1 ? u[n - 1] : 0) : 0;
    if (i <= words) v3 ^= m;
    else v2 ^= 0xff;
    for (let r = i <= words ? 2 : 4; r > 0; r--) {
      v0 = (v0 + v1) | 0;
      v1 = ((v1 << 5) | (v1 >>> 27)) ^ v0;
      v0 = (v0 << 16) | (v0 >>> 16);
      v2 = (v2 + v3) | 0;
      v3 = ((v3 << 8) | (v3 >>> 24)) ^ v2;
      v0 = (v0 + v3) | 0;
      v3 = ((v3 << 7) | (v3 >>> 25)) ^ v0;
      v2 = (v2 + v1) | 0;
      v1 = ((v1 << 13) | (v1 >>> 19)) ^ v2;
      v2 = (v2 << 16) | (v2 >>> 16);
    }
    v0 ^= m;
  }
  return (v1 ^ v3) >>> 0;
}

// The scratch buffer of `halfSipHashLines`: the code units of the text hashed.
let units = new Uint16Array(256);
function grow(n: number): void {
  units = new Uint16Array(2 ** Math.ceil(Math.log2(n)));
}

function word(bytes: Uint8Array, i: number): number {
  return (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)) >>> 0;
}
