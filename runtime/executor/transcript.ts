/**
 * Transcript event shapes and the caps that keep one run's transcript under a few MB
 * (docs/runs.md). The store adds `seq` and `time`; the executor only produces `{type, data}`.
 */

export type TranscriptEventType = 'command' | 'output' | 'message' | 'file_change' | 'state';

export interface TranscriptEventInput {
  type: TranscriptEventType;
  data: Record<string, unknown>;
}

export interface TranscriptCaps {
  /** Output kept per setup or git command (stdout and stderr together). */
  commandOutputBytes: number;
  /** Output kept over all setup and repo commands of a run together. */
  commandOutputBytesTotal: number;
  /** Agent output kept per run, `output` and `message` events together. */
  agentOutputBytes: number;
  /** Longest single `output` line or `message` text kept. */
  lineBytes: number;
  /** Diff kept per changed file, and in total over all files. */
  diffBytesPerFile: number;
  diffBytesTotal: number;
  /** `file_change` events per run. */
  maxFileChanges: number;
}

/**
 * Defaults: at most 1 MiB of command output (64 KiB per command), 1 MiB of agent output and
 * 512 KiB of diffs, so a run's transcript stays under about 3 MB with its event overhead.
 */
export const DEFAULT_CAPS: Readonly<TranscriptCaps> = Object.freeze({
  commandOutputBytes: 64 * 1024,
  commandOutputBytesTotal: 1024 * 1024,
  agentOutputBytes: 1024 * 1024,
  lineBytes: 16 * 1024,
  diffBytesPerFile: 32 * 1024,
  diffBytesTotal: 512 * 1024,
  maxFileChanges: 500,
});

/** Cuts `text` to at most `max` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, max: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return { text, truncated: false };
  let end = max;
  // Step back over UTF-8 continuation bytes so the cut lands on a character boundary.
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString('utf8'), truncated: true };
}

/** A byte budget collecting output up to a cap; remembers whether anything was dropped. */
export class CappedBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    const room = this.cap - this.size;
    if (room <= 0) {
      if (chunk.length > 0) this.truncated = true;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) this.truncated = true;
    this.chunks.push(part);
    this.size += part.length;
  }

  /** The text, at most `cap` bytes of UTF-8 also once decoded (an invalid byte becomes a 3-byte U+FFFD). */
  text(): string {
    const cut = truncateUtf8(Buffer.concat(this.chunks).toString('utf8'), this.cap);
    if (cut.truncated) this.truncated = true;
    return cut.text;
  }
}
