import type { SchemeFailure } from './types.ts';

/** Signature age: five minutes, in both directions (docs/runtime.md#limits). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const DIGITS = /^[0-9]{1,16}$/;

/** Parses a non-negative decimal integer as providers send timestamps, or undefined. */
export function parseInteger(text: string): number | undefined {
  if (!DIGITS.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * Checks a signed timestamp against `now` with the five-minute window (docs/signatures.md). A
 * signature exactly at the edge is still accepted, as in the standard-webhooks library.
 */
export function checkWindow(timestampMs: number, now: Date): SchemeFailure | undefined {
  const toleranceMs = SIGNATURE_TOLERANCE_SECONDS * 1000;
  const nowMs = now.getTime();
  // An invalid clock reading must not open the window (NaN compares false both ways).
  if (!Number.isFinite(nowMs) || !Number.isFinite(timestampMs)) return 'timestamp_too_old';
  if (nowMs - timestampMs > toleranceMs) return 'timestamp_too_old';
  if (timestampMs - nowMs > toleranceMs) return 'timestamp_in_future';
  return undefined;
}

/** Checks a Unix-seconds timestamp; the comparison uses whole seconds of `now`. */
export function checkWindowSeconds(seconds: number, now: Date): SchemeFailure | undefined {
  return checkWindow(seconds * 1000, new Date(Math.floor(now.getTime() / 1000) * 1000));
}
