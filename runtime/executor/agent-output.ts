/**
 * Agent stdout/stderr into transcript events (docs/runs.md): split into lines, read by the format's
 * reader (claude-stream-json, codex-json) or kept as `output`, batched so a chatty agent does not
 * write one event per short line, and capped per run with one "truncated" marker.
 */

import { StringDecoder } from 'node:string_decoder';
import type { LineReader } from './readers.ts';
import { truncateUtf8, type TranscriptCaps, type TranscriptEventInput } from './transcript.ts';

type Stream = 'stdout' | 'stderr';

/** Output batches are flushed at this size, when the stream changes, or after FLUSH_MS. */
const BATCH_BYTES = 8 * 1024;
/**
 * The most one event read from a JSON line may hold, serialised (docs/runs.md#transcript): a
 * message's text fields are capped by the reader, but its other fields (a todo list, a file
 * change, usage) are the agent's; past this the event keeps its kind and a cut JSON rendering,
 * cut to half the bound (quotes and backslashes double when it is serialised in turn).
 */
export const MAX_EVENT_BYTES = 64 * 1024;
const FLUSH_MS = 100;
/**
 * A line of a JSON format (claude-stream-json, codex-json) is held whole up to this size before it
 * is read, however the pipe splits it: a tool result of 100 KB is one JSON line, which cut at the
 * plain-text line cap would come out as raw fragments of JSON (docs/runs.md#transcript).
 */
const JSON_LINE_BYTES = 4 * 1024 * 1024;

/**
 * Hands `each` the leading pieces of `text` of at most `cap` UTF-8 bytes (cut between characters)
 * while it is longer than that, and returns the rest. (`length` is UTF-16 units, at most 3 bytes
 * each, so a text of at most cap/3 units needs no byte count.)
 */
function cutPieces(text: string, cap: number, each: (piece: string) => void): string {
  while (text.length > cap / 3 && Buffer.byteLength(text) > cap) {
    const cut = truncateUtf8(text, cap);
    each(cut.text);
    text = text.slice(cut.text.length);
  }
  return text;
}

export class AgentOutput {
  private readonly decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
  private readonly partial = { stdout: '', stderr: '' };
  private pending: { stream: Stream; text: string } | null = null;
  private timer: NodeJS.Timeout | undefined;
  private used = 0;
  private truncated = false;

  constructor(
    private readonly reader: LineReader | null,
    private readonly caps: TranscriptCaps,
    private readonly emit: (e: TranscriptEventInput) => void,
  ) {}

  write(stream: Stream, chunk: Buffer): void {
    let text = this.partial[stream] + this.decoders[stream].write(chunk);
    let nl: number;
    while ((nl = text.indexOf('\n')) !== -1) {
      this.line(stream, text.slice(0, nl + 1));
      text = text.slice(nl + 1);
    }
    // A line longer than the cap is cut into pieces rather than held in memory.
    const cap = this.reader && stream === 'stdout' ? JSON_LINE_BYTES : this.caps.lineBytes;
    this.partial[stream] = cutPieces(text, cap, (piece) => this.line(stream, piece));
  }

  /** Flushes partial lines and pending output; call once after the process has exited. */
  end(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const rest = this.partial[stream] + this.decoders[stream].end();
      this.partial[stream] = '';
      if (rest) this.line(stream, rest);
    }
    this.flush();
  }

  private line(stream: Stream, line: string): void {
    if (this.reader && stream === 'stdout') {
      // A line the reader cannot take apart (JSON nested thousands deep overflows the stack of
      // JSON.stringify) is kept as plain output: an agent's output never stops the runtime.
      let events: Sized[] | undefined;
      try {
        events = this.reader(line.replace(/\r?\n$/, ''))?.map(boundedEvent);
      } catch {
        events = undefined;
      }
      if (events) {
        if (events.length) this.flush();
        for (const { event, bytes } of events) if (this.charge(stream, bytes)) this.emit(event);
        return;
      }
    }
    // Kept as output: at most the line cap per piece, however long the line came.
    const rest = cutPieces(line, this.caps.lineBytes, (piece) => this.output(stream, piece));
    if (rest) this.output(stream, rest);
  }

  private output(stream: Stream, line: string): void {
    if (!this.charge(stream, Buffer.byteLength(line))) return;
    if (this.pending && this.pending.stream !== stream) this.flush();
    if (!this.pending) this.pending = { stream, text: '' };
    this.pending.text += line;
    if (Buffer.byteLength(this.pending.text) >= BATCH_BYTES) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Takes `bytes` from the run's budget; false (and one marker event) once it is spent. */
  private charge(stream: Stream, bytes: number): boolean {
    if (this.truncated) return false;
    if (this.used + bytes <= this.caps.agentOutputBytes) {
      this.used += bytes;
      return true;
    }
    this.truncated = true;
    this.flush();
    this.emit({
      type: 'output',
      data: { stream, text: `[output truncated: the agent printed more than ${this.caps.agentOutputBytes} bytes]\n`, truncated: true },
    });
    return false;
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (!this.pending) return;
    const { stream, text } = this.pending;
    this.pending = null;
    this.emit({ type: 'output', data: { stream, text } });
  }
}

/** An event and the bytes of its data serialised, what the run's budget is charged. */
interface Sized {
  event: TranscriptEventInput;
  bytes: number;
}

/**
 * `e` as it is when it serialises to at most MAX_EVENT_BYTES, else its kind and a cut JSON
 * rendering of its data; with its size, so that the data is serialised once.
 */
function boundedEvent(e: TranscriptEventInput): Sized {
  const json = JSON.stringify(e.data);
  const bytes = Buffer.byteLength(json);
  if (bytes <= MAX_EVENT_BYTES) return { event: e, bytes };
  const kind = (e.data as { kind?: unknown }).kind;
  const data = { ...(typeof kind === 'string' ? { kind } : {}), text: truncateUtf8(json, MAX_EVENT_BYTES / 2 - 512).text, truncated: true };
  return { event: { type: e.type, data }, bytes: Buffer.byteLength(JSON.stringify(data)) };
}
