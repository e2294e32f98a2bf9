/**
 * Properties of the sliding windows for random arrivals: the admitted requests never exceed the
 * limit in any rolling window, on both stores; and the Redis store decides exactly as the memory
 * store does (same outcomes, counts, reset and retry instants), bans included.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BanPolicy, Decision, LimiterStore, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";
import { createRedisStore } from "../../../../gateway/limiter/redis-store.ts";
import { startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";

const T0 = Date.UTC(2030, 0, 1, 7, 13, 21, 517); // deliberately off every bucket boundary

interface Scenario {
  windows: WindowLimit[];
  ban: BanPolicy;
  arrivals: number[];
}

/** Gaps mixing bursts (ms), minutes and hours, so both windows fill and drain. */
const gap = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2_500 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 90_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 8 * 3_600_000 }) },
);

const scenario: fc.Arbitrary<Scenario> = fc.record({
  windows: fc.record({ perMinute: fc.integer({ min: 1, max: 6 }), perDay: fc.integer({ min: 1, max: 15 }) }).map(windowsForLimits),
  ban: fc.record({ after: fc.integer({ min: 0, max: 6 }), seconds: fc.integer({ min: 1, max: 600 }) }),
  arrivals: fc.array(gap, { minLength: 1, maxLength: 80 }).map((gaps) => {
    let t = T0;
    return gaps.map((g) => (t += g));
  }),
});

async function replay(store: LimiterStore, setNow: (ms: number) => void, subject: string, s: Scenario): Promise<Decision[]> {
  const decisions: Decision[] = [];
  for (const t of s.arrivals) {
    setNow(t);
    decisions.push(await store.hit(subject, s.windows));
  }
  return decisions;
}

/** Throws unless, for every window, no rolling (t − W, t] holds more admitted requests than the limit. */
function expectNeverOverLimit(s: Scenario, decisions: readonly Decision[]): void {
  const admitted = s.arrivals.filter((_, i) => decisions[i]!.outcome === "admitted");
  for (const { windowSeconds, limit } of s.windows) {
    const w = windowSeconds * 1000;
    let from = 0;
    admitted.forEach((t, to) => {
      while (admitted[from]! <= t - w) from++;
      expect(to - from + 1, `${to - from + 1} admitted in the ${windowSeconds}s window ending ${t}`).toBeLessThanOrEqual(limit);
    });
  }
}

function memoryRun(s: Scenario, subject = "key:prop"): Promise<Decision[]> {
  let now = T0;
  return replay(createMemoryStore({ ban: s.ban, clock: () => now }), (ms) => (now = ms), subject, s);
}

describe("memory store", () => {
  it("never admits more than the limit in any rolling minute or day", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => expectNeverOverLimit(s, await memoryRun(s))),
      { numRuns: 300 },
    );
  });

  it("always admits a subject that has admitted nothing for a day and a bucket (no ban in force)", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const decisions = await memoryRun(s);
        let lastAdmitted = -Infinity;
        let bannedUntil = -Infinity;
        s.arrivals.forEach((t, i) => {
          const d = decisions[i]!;
          if (t >= bannedUntil && t - lastAdmitted >= 86_400_000 + 1_440_000) expect(d.outcome).toBe("admitted");
          if (d.outcome === "admitted") lastAdmitted = t;
          if (d.outcome === "banned") bannedUntil = d.nowMs + d.retryAfterSeconds * 1000;
        });
      }),
      { numRuns: 200 },
    );
  });
});

describe("redis store (private redis-server)", () => {
  let server: PrivateRedis;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url, { maxRetriesPerRequest: 0 });
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it("never over-admits and decides exactly as the memory store", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const subject = `key:prop-${++run}`;
        let now = T0;
        const redis = createRedisStore({ redis: client, ban: s.ban, clock: () => now });
        const fromRedis = await replay(redis, (ms) => (now = ms), subject, s);
        expectNeverOverLimit(s, fromRedis);
        expect(fromRedis).toEqual(await memoryRun(s, subject));
      }),
      { numRuns: 50 },
    );
  });
});
