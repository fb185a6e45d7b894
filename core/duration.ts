/**
 * Durations as written in environments (docs/definitions.md: `agent.timeout`, default `30m`):
 * one or more `<integer><unit>` parts, units `h`, `m`, `s` (and `ms`), e.g. `30m`, `90s`, `1h30m`.
 */

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
const WHOLE = /^(?:\d+(?:ms|h|m|s))+$/;
const PART = /(\d+)(ms|h|m|s)/g;

/** Milliseconds of a duration such as `1h30m`; throws a RangeError naming the input when invalid. */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (!WHOLE.test(s)) {
    throw new RangeError(`invalid duration "${text}": expected e.g. 30m, 90s or 1h30m`);
  }
  let ms = 0;
  for (const [, n, unit] of s.matchAll(PART)) ms += Number(n) * UNIT_MS[unit];
  if (ms <= 0) throw new RangeError(`invalid duration "${text}": must be greater than zero`);
  return ms;
}

/** A short human form of `ms` for messages: `1h30m`, `90s` → `1m30s`, `500ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  let rest = Math.round(ms / 1000);
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  const s = rest - m * 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || (!h && !m) ? `${s}s` : ''}`;
}

/** The longest `agent.timeout` (docs/definitions.md#decisions): a week. */
export const MAX_AGENT_TIMEOUT_MS = 7 * 24 * 3_600_000;

/**
 * What is wrong with an environment's `agent.timeout`, in words, or undefined: not a duration,
 * zero, or longer than a week (a timer cannot wait much longer than that: Node fires any delay
 * past about 24.8 days at once, which would end every run as timed out when it starts). The
 * compiler, the runtime's apply check and the executor all ask this.
 */
export function agentTimeoutProblem(text: string): string | undefined {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (err) {
    return (err as Error).message;
  }
  return ms > MAX_AGENT_TIMEOUT_MS ? `agent.timeout "${text}" is longer than a week (168h), the longest allowed` : undefined;
}
