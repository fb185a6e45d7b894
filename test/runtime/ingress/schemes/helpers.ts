import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { SignatureSchemeImpl } from '../../../../runtime/ingress/schemes/index.ts';
import { type SchemeFailure, type VerifyResult, headersFrom } from '../../../../runtime/ingress/schemes/types.ts';

/** Shared fixtures for the scheme tests: a fixed clock and "break exactly one thing" helpers. */

/** The fixed "now" of every test (a fake clock). */
export const NOW = new Date('2025-06-01T12:00:00.000Z');
export const NOW_SECONDS = Math.floor(NOW.getTime() / 1000);

export type HeaderRecord = Record<string, string>;

/** A real GitHub payload (copied from the reference set, MIT, see fixtures/github), as raw bytes. */
export function githubPayload(name: string): Buffer {
  return readFileSync(new URL(`fixtures/github/${name}.json`, import.meta.url));
}

/** The same bytes with one byte changed (the middle one, so JSON framing stays intact). */
export function flipByte(body: Buffer): Buffer {
  const copy = Buffer.from(body);
  const at = Math.floor(copy.length / 2);
  copy[at] = copy[at] ^ 0x01;
  return copy;
}

/** Headers with one removed (case-insensitively). */
export function without(headers: HeaderRecord, name: string): HeaderRecord {
  return Object.fromEntries(Object.entries(headers).filter(([key]) => key.toLowerCase() !== name.toLowerCase()));
}

export function verify(scheme: SignatureSchemeImpl, headers: HeaderRecord, body: Buffer, secret: string, now = NOW): VerifyResult {
  return scheme.verify(headersFrom(headers), body, secret, now);
}

export function assertOk(result: VerifyResult): void {
  assert.deepEqual(result, { ok: true });
}

export function assertFails(result: VerifyResult, reason: SchemeFailure): void {
  assert.deepEqual(result, { ok: false, reason });
}

/**
 * The common cases for a scheme: a valid request passes; one flipped body byte, a wrong secret
 * and a missing signature header each fail with the right reason.
 */
export function commonCases(options: {
  scheme: SignatureSchemeImpl;
  secret: string;
  body: Buffer;
  sign: (body: Buffer, secret: string) => HeaderRecord | Promise<HeaderRecord>;
  signatureHeader: string;
}): void {
  const { scheme, secret, body, sign, signatureHeader } = options;
  test('a valid signature passes', async () => {
    assertOk(verify(scheme, await sign(body, secret), body, secret));
  });
  test('one flipped body byte is a mismatch', async () => {
    assertFails(verify(scheme, await sign(body, secret), flipByte(body), secret), 'signature_mismatch');
  });
  test('a wrong secret is a mismatch', async () => {
    assertFails(verify(scheme, await sign(body, `${secret}x`), body, secret), 'signature_mismatch');
  });
  test('a missing signature header is missing_signature', async () => {
    assertFails(verify(scheme, without(await sign(body, secret), signatureHeader), body, secret), 'missing_signature');
  });
  test('an empty signature header is missing_signature', async () => {
    assertFails(verify(scheme, { ...(await sign(body, secret)), [signatureHeader]: '' }, body, secret), 'missing_signature');
  });
  test('an empty secret is invalid_secret', async () => {
    assertFails(verify(scheme, await sign(body, secret), body, ''), 'invalid_secret');
  });
}

/**
 * The five-minute window in both directions (docs/signatures.md, docs/runtime.md#limits): `signAt`
 * signs the body as if sent at the given Unix second.
 */
export function windowCases(options: {
  scheme: SignatureSchemeImpl;
  secret: string;
  body: Buffer;
  signAt: (seconds: number, body: Buffer, secret: string) => HeaderRecord | Promise<HeaderRecord>;
}): void {
  const { scheme, secret, body, signAt } = options;
  const at = async (offset: number) => verify(scheme, await signAt(NOW_SECONDS + offset, body, secret), body, secret);
  test('six minutes old is timestamp_too_old', async () => assertFails(await at(-360), 'timestamp_too_old'));
  test('six minutes ahead is timestamp_in_future', async () => assertFails(await at(360), 'timestamp_in_future'));
  test('4m59s old still passes', async () => assertOk(await at(-299)));
  test('4m59s ahead still passes', async () => assertOk(await at(299)));
  test('exactly five minutes old still passes', async () => assertOk(await at(-300)));
}
