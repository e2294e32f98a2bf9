import type { Clock } from "../lib/clock.ts";

/** A clock tests move by hand; starts at real time so JWT iat/exp stay meaningful. */
export interface FakeClock {
  now: number;
  advance(ms: number): void;
  clock: Clock;
}

export function fakeClock(start = Date.now()): FakeClock {
  const fake: FakeClock = {
    now: start,
    advance(ms) {
      fake.now += ms;
    },
    clock: () => fake.now,
  };
  return fake;
}
