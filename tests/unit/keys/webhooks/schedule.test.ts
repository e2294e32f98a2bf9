import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_SCHEDULE, scaledSchedule } from "../../../../keys/webhooks/schedule.ts";

describe("the retry schedule", () => {
  it("retries three times within 30 s, then from 1 min doubling to at most 1 h, for 24 h", () => {
    const delays = Array.from({ length: 12 }, (_, i) => DEFAULT_RETRY_SCHEDULE.delayMs(i + 1) / 1000);
    expect(delays).toEqual([5, 10, 15, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
    expect(DEFAULT_RETRY_SCHEDULE.giveUpAfterMs).toBe(24 * 3_600_000);
    expect(scaledSchedule(1 / 100).delayMs(4)).toBe(600);
    expect(scaledSchedule(1 / 10_000).delayMs(1)).toBe(1);
  });
});
