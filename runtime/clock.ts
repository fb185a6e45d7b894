/**
 * The runtime's only source of "now". Pure modules take `now` as an argument; runtime modules
 * take a Clock, so tests can drive time with FakeClock instead of sleeping.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to. For tests. */
export class FakeClock implements Clock {
  private ms: number;

  constructor(start: Date | string | number = '2026-01-01T00:00:00.000Z') {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  set(to: Date | string | number): void {
    this.ms = new Date(to).getTime();
  }

  /** Moves forward by `ms` milliseconds (negative moves back). */
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** RFC 3339 UTC with milliseconds, the one timestamp format of the API and the store (docs/api.md). */
export const iso = (d: Date): string => d.toISOString();
