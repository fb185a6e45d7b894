import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateMasterKey, open, seal, secretAad } from '../../runtime/crypto.ts';

test('seal/open round trip, fresh IV each time', () => {
  const key = randomBytes(32);
  const aad = secretAad('gh', 1);
  const a = seal(key, 'hunter2', aad);
  const b = seal(key, 'hunter2', aad);
  assert.notDeepEqual(a, b);
  assert.equal(open(key, a, aad).toString(), 'hunter2');
  assert.ok(!a.includes(Buffer.from('hunter2')));
});

test('any change is detected: ciphertext, tag, IV, key, AAD', () => {
  const key = randomBytes(32);
  const aad = secretAad('gh', 1);
  const sealed = seal(key, 'a secret value', aad);
  for (let i = 1; i < sealed.length; i++) {
    const t = Buffer.from(sealed);
    t[i] ^= 1;
    assert.throws(() => open(key, t, aad), /could not be decrypted/, `byte ${i}`);
  }
  assert.throws(() => open(randomBytes(32), sealed, aad));
  assert.throws(() => open(key, sealed, secretAad('gh', 2)));
  assert.throws(() => open(key, sealed, secretAad('other', 1)));
  assert.throws(() => open(key, sealed.subarray(0, 20), aad));
});

test('loadOrCreateMasterKey creates master.key with mode 0600 once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'factory-crypto-'));
  try {
    const first = loadOrCreateMasterKey(join(dir, 'data'));
    assert.equal(first.created, true);
    assert.equal(first.key.length, 32);
    assert.equal(statSync(first.path).mode & 0o777, 0o600);
    assert.deepEqual(Buffer.from(readFileSync(first.path, 'utf8').trim(), 'base64'), first.key);
    const second = loadOrCreateMasterKey(join(dir, 'data'));
    assert.equal(second.created, false);
    assert.deepEqual(second.key, first.key);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
