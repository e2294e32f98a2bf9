/**
 * Milliseconds since the epoch. Every component that reads time takes one (the limiter, key
 * verification, idempotency expiry), so tests move time instead of sleeping; production passes
 * `systemClock`, tests testkit/fake-clock.ts.
 */
export type Clock = () => number;

export const systemClock: Clock = Date.now;
