/**
 * When a failing delivery is tried again (DESIGN, Webhooks): three fast retries (5 s, 10 s, 15 s
 * apart: within about 30 s of the first failure), then 1 min doubling up to 1 h, until 24 h have
 * passed since the first attempt; then the event is given up and the next one goes. Injectable
 * (createKeyService's `webhookSchedule`) so tests run a day of retries in seconds.
 */
export interface RetrySchedule {
  /** How long after the `failures`-th failed attempt (1, 2, …) the next one is due. */
  delayMs(failures: number): number;
  /** An event still failing this long after its first attempt is given up. */
  giveUpAfterMs: number;
}

const FAST_RETRIES_MS = [5_000, 10_000, 15_000];
const FIRST_BACKOFF_MS = 60_000;
const MAX_BACKOFF_MS = 3_600_000;

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  delayMs(failures) {
    const fast = FAST_RETRIES_MS[failures - 1];
    if (fast !== undefined) return fast;
    return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (failures - 1 - FAST_RETRIES_MS.length));
  },
  giveUpAfterMs: 24 * 3_600_000,
};

/** The default schedule with every time multiplied by `factor` (tests: 1/100 makes a minute 0.6 s). */
export const scaledSchedule = (factor: number, base: RetrySchedule = DEFAULT_RETRY_SCHEDULE): RetrySchedule => ({
  delayMs: (failures) => Math.round(base.delayMs(failures) * factor),
  giveUpAfterMs: Math.round(base.giveUpAfterMs * factor),
});
