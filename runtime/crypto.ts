import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CliError, FactoryError } from '../core/errors.ts';
import { writeFileDurably } from './durable-file.ts';

/**
 * AES-256-GCM for team secrets at rest (docs/runtime.md). The sealed form is one buffer:
 * `version byte (1) | IV (12) | tag (16) | ciphertext`. The additional authenticated data binds a
 * ciphertext to its secret name and version, so a row copied onto another secret (or another
 * version) fails to open instead of yielding the wrong value.
 */
const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const MASTER_KEY_BYTES = 32;

function checkKey(key: Buffer): void {
  if (key.length !== MASTER_KEY_BYTES) throw new Error('the master key must be 32 bytes');
}

/** The AAD for one secret version. */
export function secretAad(name: string, version: number): Buffer {
  return Buffer.from(`factory-secret\0${name}\0${version}`, 'utf8');
}

/** Encrypts `plaintext` under `key` with a fresh random IV. */
export function seal(key: Buffer, plaintext: Buffer | string, aad: Buffer): Buffer {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.of(FORMAT), iv, cipher.getAuthTag(), body]);
}

/**
 * Decrypts a buffer made by `seal`. A wrong key, a wrong AAD or any changed byte throws
 * (GCM authenticates everything), as a 500: a value we wrote cannot be opened.
 */
export function open(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  checkKey(key);
  if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== FORMAT) {
    throw new FactoryError('internal_error', 'A stored secret could not be decrypted.');
  }
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const body = sealed.subarray(1 + IV_BYTES + TAG_BYTES);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(body), decipher.final()]);
  } catch (cause) {
    throw new FactoryError('internal_error', 'A stored secret could not be decrypted.', { cause });
  }
}

/**
 * Reads `<dataDir>/master.key` (base64 of 32 bytes), creating it with mode 0600 on first use
 * (docs/runtime.md). Used only when FACTORY_MASTER_KEY is absent. Creates the data dir (0700) if
 * needed.
 */
export function loadOrCreateMasterKey(dataDir: string): { key: Buffer; path: string; created: boolean } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'master.key');
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text === undefined) {
    const key = randomBytes(MASTER_KEY_BYTES);
    // Exclusive: fails if another process created it meanwhile, rather than overwriting its key.
    // Durable: the database will soon hold secrets sealed with it (a power loss must not leave an
    // empty file beside them).
    writeFileDurably(path, key.toString('base64') + '\n', { mode: 0o600, exclusive: true });
    return { key, path, created: true };
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== MASTER_KEY_BYTES) {
    throw new CliError(`${path} does not hold the base64 encoding of 32 bytes; restore it from a backup or set FACTORY_MASTER_KEY.`);
  }
  return { key, path, created: false };
}
