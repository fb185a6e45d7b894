import { randomBytes, randomFillSync } from 'node:crypto';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** Lowercase RFC 4648 base32 (no padding) of `bytes`, truncated to `length` characters. */
function base32(bytes: Buffer, length: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < length) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0 && out.length < length) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * CSPRNG bytes for ids, drawn 4 KB at a time: one `randomBytes(17)` costs about 2 µs, most of it
 * the call itself, and a delivery that matches creates a run id on the ingress's hot path. Each
 * byte is handed out once; the pool is this process's own.
 */
const ID_POOL_BYTES = 4096;
let idPool = Buffer.alloc(0);
let idPoolOffset = 0;
function idBytes(n: number): Buffer {
  if (idPoolOffset + n > idPool.length) {
    idPool = randomFillSync(Buffer.allocUnsafe(ID_POOL_BYTES));
    idPoolOffset = 0;
  }
  const bytes = idPool.subarray(idPoolOffset, idPoolOffset + n);
  idPoolOffset += n;
  return bytes;
}

/** `<prefix>_` + 26 lowercase base32 characters (130 bits from a CSPRNG; docs/definitions.md). */
export function newId(prefix: 'wh' | 'key' | 'dlv' | 'evt'): string {
  return `${prefix}_${base32(idBytes(17), 26)}`;
}

/** The first characters of a sortable id: 50 bits of milliseconds since 1970, 5 bits a character. */
const TIME_CHARS = 10;
/** The same 32 characters as BASE32 in byte order, so that a later time is a greater string. */
const SORTED32 = '234567abcdefghijklmnopqrstuvwxyz';

/**
 * `<prefix>_` + 26 lowercase base32 characters that sort by creation time: 10 for the millisecond
 * (50 bits, big-endian, in the alphabet's byte order: `2`–`7` then `a`–`z`), then 16 from a
 * CSPRNG (80 bits), so ids made in the same millisecond still never collide or guess (docs/api.md#runs). Runs and notification messages use these: each
 * of their ids goes into indexes (the run's own, its attachments', its events', its
 * notifications'), and a random id would dirty a page of its own in each of them per run
 * (docs/ingress.md#a-run-per-delivery).
 */
export function newSortableId(prefix: 'run' | 'msg', now: number = Date.now()): string {
  let time = '';
  for (let i = TIME_CHARS - 1, t = Math.max(0, Math.floor(now)); i >= 0; i--) {
    time = SORTED32[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return `${prefix}_${time}${base32(idBytes(10), 26 - TIME_CHARS)}`;
}

export const WEBHOOK_UID_PATTERN = /^wh_[a-z2-7]{26}$/;
export const RUN_ID_PATTERN = /^run_[a-z2-7]{26}$/;
export const KEY_ID_PATTERN = /^key_[a-z2-7]{26}$/;
export const RESOURCE_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** 32 random bytes, base64url: generated token and url_token secrets (docs/ingress.md#webhook-lifecycle). */
export function newTokenSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes (docs/signatures.md#the-schemes). */
export function newStandardWebhooksSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/** An API key: `fk_` + 43 base64url characters (32 random bytes; docs/runtime.md). */
export function newApiKey(): string {
  return 'fk_' + randomBytes(32).toString('base64url');
}
