import type { Readable } from 'node:stream';

/**
 * The capped body reader of pipeline step 5 (docs/ingress.md). A declared `Content-Length` over the
 * cap is refused before a byte is read; without one (chunked), reading stops at the first byte past
 * the cap. In both cases nothing past the cap is buffered: the caller answers 413 and then discards
 * or cuts off the rest (see `discardRest`).
 */

export type BodyResult =
  | { ok: true; body: Buffer }
  /** `size` is the declared length, or the bytes seen before reading stopped (cap + 1 or more). */
  | { ok: false; reason: 'too_large'; size: number }
  | { ok: false; reason: 'aborted'; size: number }
  /** The whole request did not arrive within the server's request timeout (docs/errors.md). */
  | { ok: false; reason: 'timeout'; size: number };

/**
 * Parses a Content-Length header value; undefined when absent or not a plain decimal. A length
 * of 16 digits or more (beyond any body anyone sends, and beyond exact numbers here) is
 * Number.MAX_SAFE_INTEGER: too large, like any other length over the cap.
 */
export function declaredLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  const digits = trimmed.replace(/^0+(?=\d)/, '');
  return digits.length > 15 ? Number.MAX_SAFE_INTEGER : Number(digits);
}

/**
 * Reads `stream` into one Buffer of at most `cap` bytes. Leaves the stream paused (not
 * destroyed) when it stops early, so the response can still be written on the same socket.
 */
export function readCappedBody(stream: Readable, cap: number, contentLength?: number): Promise<BodyResult> {
  if (contentLength !== undefined && contentLength > cap) {
    return Promise.resolve({ ok: false, reason: 'too_large', size: contentLength });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    // The handlers are methods of one object, not `const f = () => ...`: run through tsx, each
    // named arrow made per request also gets its name set (esbuild keepNames), ~0.4 µs apiece on
    // the hot path (docs/ingress.md#constant-cost-per-delivery).
    const on = {
      finish(result: BodyResult) {
        if (done) return;
        done = true;
        stream.off('data', on.data);
        stream.off('end', on.end);
        stream.off('error', on.aborted);
        stream.off('close', on.aborted);
        resolve(result);
      },
      data(chunk: Buffer | string) {
        const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        size += buf.length;
        if (size > cap) {
          // Keep nothing more: pause here and let the caller answer 413 (pipeline step 5).
          stream.pause();
          chunks.length = 0;
          on.finish({ ok: false, reason: 'too_large', size });
          return;
        }
        chunks.push(buf);
      },
      end() {
        on.finish({ ok: true, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size) });
      },
      aborted(err?: unknown) {
        const timedOut = (err as { code?: string } | undefined)?.code === 'ERR_HTTP_REQUEST_TIMEOUT';
        on.finish({ ok: false, reason: timedOut ? 'timeout' : 'aborted', size });
      },
    };
    stream.on('data', on.data);
    stream.on('end', on.end);
    stream.on('error', on.aborted);
    stream.on('close', on.aborted);
    if ((stream as { readableEnded?: boolean }).readableEnded) on.end();
  });
}

/** How much of an oversized body is read and thrown away so that the client sees the 413. */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
/** How long an oversized body is read and thrown away before the connection is cut. */
export const DISCARD_LIMIT_MS = 10_000;

/**
 * After a 413 has been answered, reads the rest of the request and throws it away (so the
 * client, still writing, is not reset before it reads the 413), up to a byte and time budget;
 * past the budget the socket is destroyed. Nothing is kept in memory.
 */
export function discardRest(
  stream: Readable & { socket?: { destroy(): void } | null },
  alreadyRead: number,
  limits = { bytes: DISCARD_LIMIT_BYTES, ms: DISCARD_LIMIT_MS },
): void {
  if ((stream as { readableEnded?: boolean }).readableEnded) return;
  let seen = alreadyRead;
  const cut = () => {
    stream.off('data', onData);
    stream.socket?.destroy();
  };
  const timer = setTimeout(cut, limits.ms);
  timer.unref();
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limits.bytes) {
      clearTimeout(timer);
      cut();
    }
  };
  stream.on('data', onData);
  stream.once('end', () => clearTimeout(timer));
  stream.once('close', () => clearTimeout(timer));
  stream.on('error', () => {});
  stream.resume();
}
