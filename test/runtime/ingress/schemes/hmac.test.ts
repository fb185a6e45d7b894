import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  anyDigestEquals, decodeBase64, decodeBase64Url, decodeHex, digestEquals, hmac, secretEquals,
} from '../../../../runtime/ingress/schemes/hmac.ts';

describe('hmac helpers', () => {
  const digest = hmac('sha256', "It's a Secret to Everybody", 'Hello, World!');

  test('hmac concatenates its parts and pins the GitHub vector', () => {
    assert.equal(digest.toString('hex'), '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
    assert.deepEqual(hmac('sha256', "It's a Secret to Everybody", 'Hello, ', Buffer.from('World!')), digest);
  });

  test('digestEquals is false, never a throw, on a length mismatch', () => {
    assert.equal(digestEquals(digest.subarray(0, 31), digest), false);
    assert.equal(digestEquals(Buffer.alloc(0), digest), false);
    assert.equal(digestEquals(undefined, digest), false);
    assert.equal(digestEquals(Buffer.from(digest), digest), true);
  });

  test('anyDigestEquals finds a match in any position', () => {
    const other = Buffer.alloc(32);
    assert.equal(anyDigestEquals([other, digest, other], digest), true);
    assert.equal(anyDigestEquals([other, other], digest), false);
    assert.equal(anyDigestEquals([], digest), false);
  });

  test('secretEquals compares strings of any length', () => {
    assert.equal(secretEquals('token', 'token'), true);
    assert.equal(secretEquals('token', 'token2'), false);
    assert.equal(secretEquals('', 'token'), false);
  });

  test('decodeHex takes exactly the digest length, either case', () => {
    const hex = digest.toString('hex');
    assert.deepEqual(decodeHex(hex, 32), digest);
    assert.deepEqual(decodeHex(hex.toUpperCase(), 32), digest);
    assert.equal(decodeHex(hex.slice(2), 32), undefined);
    assert.equal(decodeHex(`${hex.slice(2)}zz`, 32), undefined);
    assert.equal(decodeHex('', 32), undefined);
  });

  test('decodeBase64 is strict about the alphabet and padding', () => {
    assert.deepEqual(decodeBase64('AAEC'), Buffer.from([0, 1, 2]));
    assert.deepEqual(decodeBase64('AAE='), Buffer.from([0, 1]));
    assert.deepEqual(decodeBase64('AAE'), Buffer.from([0, 1]));
    assert.equal(decodeBase64('AAE=='), undefined);
    assert.equal(decodeBase64('A'), undefined);
    assert.equal(decodeBase64('AA-_'), undefined);
    assert.equal(decodeBase64('AA E'), undefined);
    assert.equal(decodeBase64(''), undefined);
  });

  test('decodeBase64Url takes the URL alphabet only', () => {
    assert.deepEqual(decodeBase64Url('AA-_'), Buffer.from([0, 15, 191]));
    assert.equal(decodeBase64Url('AA+/'), undefined);
    assert.equal(decodeBase64Url('AAE='), undefined);
  });
});
