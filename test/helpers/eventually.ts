/**
 * The one polling helper of the test suite. It asks `probe` again and again until its answer is
 * done (truthy, or `until(answer)` when given), and returns that answer. Bounded by a number of
 * tries, never by a clock: the machine running the tests is shared and may be slow, and a test that
 * waits longer still passes. No test sleeps for a fixed time where a condition can be polled.
 */
export interface EventuallyOptions<T> {
  /** When the answer is done; by default when it is truthy. */
  until?: (answer: T) => boolean;
  /** How many times to ask (default 600). */
  tries?: number;
  /** Pause between two tries, in milliseconds (default 50). */
  everyMs?: number;
}

export async function eventually<T>(probe: () => T | Promise<T>, what: string, options: EventuallyOptions<T> = {}): Promise<T> {
  const { until = Boolean, tries = 600, everyMs = 50 } = options;
  let answer: T | undefined;
  for (let i = 0; i < tries; i++) {
    if (i > 0) await new Promise((resume) => setTimeout(resume, everyMs));
    answer = await probe();
    if (until(answer)) return answer;
  }
  throw new Error(`gave up waiting for ${what}; the last answer was ${describe(answer)}`);
}

function describe(answer: unknown): string {
  try {
    const text = JSON.stringify(answer);
    return text === undefined ? String(answer) : text.length > 500 ? text.slice(0, 500) + '...' : text;
  } catch {
    return String(answer);
  }
}
