import { gunzip } from 'node:zlib';
import type { Context } from 'koa';
import { FactoryError } from '../../core/errors.ts';
import { jsonTextDepth, MAX_JSON_DEPTH } from '../../core/json-depth.ts';
import { jsonProblem } from '../../core/json-reason.ts';
import { LONE_SURROGATE } from '../../core/text.ts';
import { walkJson } from '../../core/json-walk.ts';

export interface ReadJsonOptions {
  /** Hard cap in bytes (config.limits.apiBodyBytes for the management and run APIs). */
  limit: number;
  /**
   * Accept `Content-Encoding: gzip` (plan and apply only, docs/plan-apply.md#large-factories):
   * `limit` then caps both the bytes received and the bytes they decompress to.
   */
  gzip?: boolean;
  /** Answered for an empty body instead of refusing it (`noBody`). */
  emptyAs?: unknown;
  /**
   * Accept NUL characters (U+0000) in strings: only for what is stored as JSON text, a worker's
   * transcript events (an agent may print one). Elsewhere they are refused, as PostgreSQL's text
   * columns cannot hold them and the two engines must accept the same requests.
   */
  keepNul?: boolean;
}

/**
 * Reads the request body as JSON for the management and run APIs (the ingress has its own
 * raw-bytes reader). A declared Content-Length over the cap is refused before reading; without
 * one, reading stops at the cap and the rest is discarded unbuffered (413, `Connection: close`).
 * The bytes must be valid UTF-8 (no replacement characters), then valid JSON nested at most
 * MAX_JSON_DEPTH levels (400 invalid_json): deeper values would overflow the stack of whatever
 * walks them later (JSON.stringify, Ajv, canonical JSON), a 500 for the client's mistake
 * (docs/api.md).
 */
export async function readJsonBody(ctx: Context, options: ReadJsonOptions): Promise<unknown> {
  const gzipped = contentEncoding(ctx, options.gzip === true);
  let bytes = await readCapped(ctx, options.limit);
  if (gzipped) bytes = await gunzipCapped(bytes, options.limit);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new FactoryError('invalid_json', 'The request body is not valid UTF-8.');
  }
  if (text.trim() === '') {
    if ('emptyAs' in options) return options.emptyAs;
    throw new FactoryError('invalid_json', 'The request body is empty; expected a JSON document.');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FactoryError('invalid_json', `The request body is not valid JSON: ${jsonProblem((err as Error).message)}.`);
  }
  if (jsonTextDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new FactoryError('invalid_json', `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  const odd = unrepresentable(value, options.keepNul === true);
  if (odd) throw new FactoryError('invalid_json', `The request body has ${odd}, which would not be stored as sent.`);
  return value;
}


/**
 * What JSON.parse accepts but could not be kept as sent, with where it is: a number too large for a
 * double (1e400 parses to Infinity, which JSON writes as null), or a string or key with an unpaired
 * UTF-16 surrogate (`"\ud800"`, which UTF-8 cannot hold and would be written as U+FFFD).
 */
function unrepresentable(root: unknown, keepNul: boolean): string | undefined {
  let found: string | undefined;
  walkJson(root, {
    value(value, at) {
      if (typeof value === 'number' && !Number.isFinite(value)) found = `a number too large to represent at ${at || '/'}`;
      else if (typeof value === 'string' && LONE_SURROGATE.test(value)) found = `a string with an unpaired UTF-16 surrogate escape at ${at || '/'}`;
      else if (typeof value === 'string' && !keepNul && value.includes('\0')) found = `a string with a NUL character (U+0000) at ${at || '/'}`;
      return found === undefined ? undefined : 'stop';
    },
    key(key, at) {
      if (LONE_SURROGATE.test(key)) found = `a key with an unpaired UTF-16 surrogate escape in ${at || '/'}`;
      else if (!keepNul && key.includes('\0')) found = `a key with a NUL character (U+0000) in ${at || '/'}`;
      return found === undefined ? undefined : 'stop';
    },
  });
  return found;
}

/**
 * For routes that take no body (enable, disable, delete, cancel, retry, pause, resume, revoke):
 * none, an empty one or `{}` is fine; anything else is refused (400) before the route changes anything.
 */
export async function noBody(ctx: Context, next: () => Promise<unknown>): Promise<void> {
  const length = ctx.get('Content-Length');
  if ((length === '' || length === '0') && ctx.get('Transfer-Encoding') === '') {
    await next();
    return;
  }
  const value = await readJsonBody(ctx, { limit: NO_BODY_LIMIT, emptyAs: {} });
  if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length > 0) {
    throw new FactoryError('invalid_request', 'This request takes no body; send none, or an empty JSON object.');
  }
  await next();
}

/** The most a body-less route reads of a body it was sent anyway. */
const NO_BODY_LIMIT = 1024;

/**
 * True for a gzip body where one is accepted. Any other encoding is refused before the body is
 * read (415), rather than parsed as if it were plain JSON and reported as invalid JSON.
 */
function contentEncoding(ctx: Context, gzipAccepted: boolean): boolean {
  const raw = ctx.get('Content-Encoding').trim().toLowerCase();
  if (raw === '' || raw === 'identity') return false;
  if (gzipAccepted && (raw === 'gzip' || raw === 'x-gzip')) return true;
  const what = gzipAccepted
    ? `Content-Encoding '${raw}' is not accepted here; send the body uncompressed or gzip-compressed.`
    : `Content-Encoding '${raw}' is not accepted here; send the body uncompressed (only plan and apply take gzip).`;
  throw new FactoryError('unsupported_media_type', `The request body's ${what}`);
}

/**
 * Decompresses a gzip body, stopping as soon as the output passes `limit`: a small body that
 * inflates to gigabytes (a zip bomb) costs at most `limit` bytes of memory before the 413.
 */
function gunzipCapped(bytes: Buffer, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    gunzip(bytes, { maxOutputLength: limit }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        return reject(new FactoryError('payload_too_large', `The request body is larger than ${limit} bytes once decompressed.`));
      }
      reject(new FactoryError('invalid_json', 'The request body is declared gzip (Content-Encoding) but is not valid gzip data.'));
    });
  });
}

function tooLarge(limit: number): FactoryError {
  return new FactoryError('payload_too_large', `The request body is larger than ${limit} bytes.`, {
    headers: { Connection: 'close' },
  });
}

function readCapped(ctx: Context, limit: number): Promise<Buffer> {
  const declared = ctx.get('Content-Length');
  if (declared && Number(declared) > limit) return Promise.reject(tooLarge(limit));
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        chunks.length = 0;
        // Keep draining without keeping anything, so the 413 can still be written.
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new FactoryError('invalid_request', 'The request body could not be read.', { cause: err }));
    };
    const onAborted = () => onError(new Error('aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
