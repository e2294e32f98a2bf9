/**
 * One conformance suite for both limiter stores, each with an injected clock (no sleeping): the
 * memory store, and the Redis store on a private redis-server.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { BanPolicy, Decision, LimiterStore, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { ANONYMOUS_WINDOWS, windowsFor, windowsForLimits } from "../../../../gateway/quota/plans.ts";
import { PLANS } from "../../../../lib/plans.ts";
import { createRedisStore, limiterKeys } from "../../../../gateway/limiter/redis-store.ts";
import { redisKey } from "../../../../lib/redis-keys.ts";
import { startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import type { Clock } from "../../../../lib/clock.ts";

interface Harness {
  store: LimiterStore;
  revoke(subject: string): Promise<void>;
  /** Buckets held for the subject, all windows together. */
  bucketCount(subject: string): Promise<number>;
}
type HarnessFactory = (clock: Clock, ban: BanPolicy) => Promise<Harness>;

/** 2030-01-01T00:00:00Z: a boundary of both the 1 s and the 1,440 s buckets. */
const T0 = Date.UTC(2030, 0, 1);
const T0S = T0 / 1000;
const SEC = 1000;
const MIN = 60 * SEC;
const DAY_BUCKET = 1440 * SEC;
const DAY = 86_400 * SEC;
/** Bans out of the way, for the tests about windows. */
const NO_BAN: BanPolicy = { after: 1_000_000, seconds: 900 };
const BAN: BanPolicy = { after: 3, seconds: 900 };

const limits = (perMinute: number, perDay: number): WindowLimit[] => windowsForLimits({ perMinute, perDay });

function conformance(name: string, factory: HarnessFactory): void {
  describe(name, () => {
    let now = T0;
    let serial = 0;
    let h: Harness;
    let subject: string;
    const setup = async (ban: BanPolicy = NO_BAN) => {
      h = await factory(() => now, ban);
      subject = `key:conf-${++serial}`;
    };
    const hitAt = (ms: number, windows: readonly WindowLimit[], who = subject): Promise<Decision> => {
      now = ms;
      return h.store.hit(who, windows);
    };
    const outcomes = async (ms: number, windows: readonly WindowLimit[], n: number): Promise<string[]> => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push((await hitAt(ms, windows)).outcome);
      return out;
    };
    /** Retry-After is exact: refused a second earlier and an instant before `retryAt`, admitted at the advertised second. */
    const expectExactRetry = async (limited: Decision, retryAtMs: number, windows: readonly WindowLimit[]) => {
      expect(limited.outcome).toBe("limited");
      expect(limited.retryAfterSeconds).toBe(Math.ceil((retryAtMs - limited.nowMs) / SEC));
      expect((await hitAt(limited.nowMs + (limited.retryAfterSeconds - 1) * SEC, windows)).outcome).toBe("limited");
      expect((await hitAt(retryAtMs - 1, windows)).outcome).toBe("limited");
      expect((await hitAt(limited.nowMs + limited.retryAfterSeconds * SEC, windows)).outcome).toBe("admitted");
    };

    beforeEach(() => {
      now = T0;
    });

    it("admits exactly the per-minute limit, then refuses on the minute window", async () => {
      await setup();
      const w = limits(5, 1000);
      const admitted: Decision[] = [];
      for (let i = 0; i < 5; i++) admitted.push(await hitAt(T0 + 250, w));
      expect(admitted.map((d) => d.outcome)).toEqual(Array(5).fill("admitted"));
      expect(admitted.map((d) => d.windows[0]!.remaining)).toEqual([4, 3, 2, 1, 0]);
      expect(admitted.map((d) => d.retryAfterSeconds)).toEqual([0, 0, 0, 0, 0]);

      const limited = await hitAt(T0 + 350, w);
      expect(limited).toMatchObject({ outcome: "limited", binding: 0, nowMs: T0 + 350 });
      expect(limited.windows.map((x) => [x.remaining, x.refused])).toEqual([
        [0, true],
        [995, false],
      ]);
      // All five sit in the bucket [T0, T0+1s), which leaves the window at T0 + 61 s.
      expect(limited.retryAfterSeconds).toBe(61);
      await expectExactRetry(limited, T0 + 61 * SEC, w);
    });

    it("slides: quota comes back bucket by bucket, not at a fixed minute boundary", async () => {
      await setup();
      const w = limits(5, 1000);
      expect(await outcomes(T0 + 500, w, 3)).toEqual(Array(3).fill("admitted"));
      expect(await outcomes(T0 + 30_500, w, 2)).toEqual(Array(2).fill("admitted"));
      const atBoundary = await hitAt(T0 + 60_500, w);
      expect(atBoundary.outcome).toBe("limited");
      expect(atBoundary.retryAfterSeconds).toBe(1);
      // At T0 + 61 s the first three leave the window; the two from T0 + 30.5 s stay until T0 + 91 s.
      expect(await outcomes(T0 + 61 * SEC, w, 3)).toEqual(Array(3).fill("admitted"));
      const again = await hitAt(T0 + 61 * SEC, w);
      expect(again.retryAfterSeconds).toBe(30);
      await expectExactRetry(again, T0 + 91 * SEC, w);
    });

    it("admits exactly the per-day limit across minutes and day buckets, with an exact Retry-After", async () => {
      await setup();
      const w = limits(10, 12);
      expect(await outcomes(T0 + 5 * SEC, w, 6)).toEqual(Array(6).fill("admitted"));
      expect(await outcomes(T0 + 30 * MIN, w, 6)).toEqual(Array(6).fill("admitted"));
      const limited = await hitAt(T0 + 32 * MIN, w); // the minute window is empty again
      expect(limited).toMatchObject({ outcome: "limited", binding: 1 });
      expect(limited.windows.map((x) => [x.remaining, x.refused])).toEqual([
        [10, false],
        [0, true],
      ]);
      // The first six (day bucket 0) leave the day window at T0 + 1,440 s + 86,400 s.
      const retryAt = T0 + DAY_BUCKET + DAY;
      expect(limited.retryAfterSeconds).toBe((retryAt - (T0 + 32 * MIN)) / SEC);
      await expectExactRetry(limited, retryAt, w);
      const after = await hitAt(retryAt + 1, w);
      expect(after.windows[1]!.remaining).toBe(12 - 6 - 2);
    });

    it("does not count refused requests", async () => {
      await setup();
      const w = limits(3, 1000);
      expect(await outcomes(T0, w, 3)).toEqual(Array(3).fill("admitted"));
      for (let s = 1; s <= 50; s++) {
        const d = await hitAt(T0 + s * SEC, w);
        expect(d.outcome).toBe("limited");
        expect(d.windows[1]!.remaining).toBe(997);
      }
      expect(await outcomes(T0 + 61 * SEC, w, 4)).toEqual(["admitted", "admitted", "admitted", "limited"]);
      expect((await hitAt(T0 + 61 * SEC, w)).windows[1]!.remaining).toBe(994);
    });

    it("reports remaining, reset and release instants for both windows", async () => {
      await setup();
      const w = limits(60, 1000);
      const first = await hitAt(T0 + 250, w);
      expect(first).toMatchObject({ outcome: "admitted", binding: 0, retryAfterSeconds: 0, nowMs: T0 + 250 });
      expect(first.windows).toEqual([
        { windowSeconds: 60, limit: 60, remaining: 59, resetAt: T0S + 61, releaseAtMs: T0 + 61 * SEC, refused: false },
        { windowSeconds: 86_400, limit: 1000, remaining: 999, resetAt: T0S + 1440 + 86_400, releaseAtMs: T0 + DAY_BUCKET + DAY, refused: false },
      ]);
      const second = await hitAt(T0 + 10_400, w);
      // Reset follows the newest request; release (when quota next grows) the oldest.
      expect(second.windows[0]).toMatchObject({ remaining: 58, resetAt: T0S + 71, releaseAtMs: T0 + 61 * SEC });
      expect(second.windows[1]).toMatchObject({ remaining: 998, resetAt: T0S + 1440 + 86_400 });
      // Two days later everything has expired: the full quota again.
      const later = await hitAt(T0 + 2 * DAY, w);
      expect(later.windows.map((x) => x.remaining)).toEqual([59, 999]);
    });

    it("binds on the window with the least remaining", async () => {
      await setup();
      const d = await hitAt(T0, limits(10, 3));
      expect(d.binding).toBe(1);
      expect(d.windows.map((x) => x.remaining)).toEqual([9, 2]);
    });

    it("keeps subjects independent", async () => {
      await setup();
      const w = limits(2, 1000);
      expect(await outcomes(T0, w, 3)).toEqual(["admitted", "admitted", "limited"]);
      const other = await hitAt(T0, w, `${subject}-other`);
      expect(other.outcome).toBe("admitted");
      expect(other.windows[0]!.remaining).toBe(1);
    });

    it(`bans after ${BAN.after} refusals within the retry period; Retry-After is the time left; the ban expires`, async () => {
      await setup(BAN);
      const w = limits(1, 1000);
      expect((await hitAt(T0, w)).outcome).toBe("admitted");
      expect((await hitAt(T0 + 1 * SEC, w)).outcome).toBe("limited");
      expect((await hitAt(T0 + 2 * SEC, w)).outcome).toBe("limited");
      const banned = await hitAt(T0 + 3 * SEC, w);
      expect(banned).toMatchObject({ outcome: "banned", retryAfterSeconds: 900 });
      const banEnd = T0 + 3 * SEC + 900 * SEC;

      const later = await hitAt(T0 + 103 * SEC, w);
      expect(later).toMatchObject({ outcome: "banned", retryAfterSeconds: 800 });
      expect(later.windows[1]!.remaining).toBe(999); // nothing counted while banned
      expect(await hitAt(banEnd - 1, w)).toMatchObject({ outcome: "banned", retryAfterSeconds: 1 });
      expect((await hitAt(banEnd, w)).outcome).toBe("admitted");
    });

    it("does not ban a client that waits out each retry period", async () => {
      await setup(BAN);
      const w = limits(1, 1000);
      expect(await outcomes(T0, w, 1)).toEqual(["admitted"]);
      expect(await outcomes(T0 + 1 * SEC, w, 2)).toEqual(["limited", "limited"]);
      // The retry period ended at T0 + 61 s: the strikes are forgotten.
      expect(await outcomes(T0 + 61 * SEC, w, 3)).toEqual(["admitted", "limited", "limited"]);
      expect(await outcomes(T0 + 62 * SEC, w, 1)).toEqual(["banned"]);
    });

    it("counts strikes up to the last instant of the retry period", async () => {
      await setup(BAN);
      const w = limits(1, 1000);
      expect(await outcomes(T0, w, 1)).toEqual(["admitted"]);
      expect(await outcomes(T0 + 1 * SEC, w, 1)).toEqual(["limited"]);
      // The retry period ends at T0 + 61 s: refusals an instant before it still count.
      expect(await outcomes(T0 + 61 * SEC - 1, w, 2)).toEqual(["limited", "banned"]);
    });

    it("escalates repeat offences (doubling, capped at a day) and forgets them a day after the ban", async () => {
      await setup({ after: 2, seconds: 30_000 });
      const w = limits(1, 1000);
      const offend = async (start: number): Promise<Decision> => {
        expect((await hitAt(start, w)).outcome).toBe("admitted");
        expect((await hitAt(start + SEC, w)).outcome).toBe("limited");
        return hitAt(start + 2 * SEC, w);
      };
      const first = await offend(T0);
      expect(first).toMatchObject({ outcome: "banned", retryAfterSeconds: 30_000 });
      const second = await offend(first.nowMs + 30_000 * SEC);
      expect(second).toMatchObject({ outcome: "banned", retryAfterSeconds: 60_000 });
      const third = await offend(second.nowMs + 60_000 * SEC);
      expect(third).toMatchObject({ outcome: "banned", retryAfterSeconds: 86_400 });
      // A day after the third ban ends, the record is clean again.
      const fresh = await offend(third.nowMs + 86_400 * SEC + DAY + SEC);
      expect(fresh).toMatchObject({ outcome: "banned", retryAfterSeconds: 30_000 });
    });

    it("answers revoked for a revoked subject and counts nothing", async () => {
      await setup(BAN);
      const w = limits(5, 1000);
      await outcomes(T0, w, 2);
      await h.revoke(subject);
      for (let i = 0; i < 10; i++) {
        const d = await hitAt(T0 + i * SEC, w);
        expect(d).toMatchObject({ outcome: "revoked", retryAfterSeconds: 0 });
        expect(d.windows.map((x) => x.remaining)).toEqual([3, 998]);
      }
      expect((await hitAt(T0, w, `${subject}-other`)).outcome).toBe("admitted");
    });

    it("peeks at the windows and the ban as a decision would see them, counting nothing and adding no strike", async () => {
      await setup(BAN);
      const w = limits(3, 1000);
      const peekAt = (ms: number) => {
        now = ms;
        return h.store.peek(subject, w);
      };
      expect(await peekAt(T0)).toMatchObject({ outcome: "admitted", retryAfterSeconds: 0 });
      expect((await peekAt(T0)).windows.map((x) => x.remaining)).toEqual([3, 1000]);
      await outcomes(T0 + 250, w, 2);
      const third = await hitAt(T0 + 30 * SEC, w);
      for (let i = 0; i < 5; i++) {
        const peeked = await peekAt(T0 + 30 * SEC);
        expect(peeked.outcome).toBe("admitted");
        expect(peeked.windows).toEqual(third.windows); // what the last admission reported, to the millisecond
      }
      // At the limit: peeks add no strike (three refusals ban; the third one does, not a later one).
      for (let i = 0; i < 5; i++) expect((await peekAt(T0 + 31 * SEC)).outcome).toBe("admitted");
      expect(await outcomes(T0 + 31 * SEC, w, 3)).toEqual(["limited", "limited", "banned"]);
      const banned = await peekAt(T0 + 32 * SEC);
      expect(banned).toMatchObject({ outcome: "banned", retryAfterSeconds: BAN.seconds - 1 });
      expect(banned.windows.map((x) => x.remaining)).toEqual([0, 997]);
      // The first two requests' bucket left the minute window; a decision then would see the same.
      const later = await peekAt(T0 + 61 * SEC);
      expect(later.windows.map((x) => x.remaining)).toEqual([2, 997]);
      expect(later.windows[0]!.releaseAtMs).toBe(T0 + 91 * SEC);
      await h.revoke(subject);
      expect((await peekAt(T0 + 62 * SEC)).outcome).toBe("revoked");
    });

    it("rejects windows it cannot honour", async () => {
      await setup();
      await expect(h.store.hit(subject, [{ windowSeconds: 60, limit: 0 }])).rejects.toThrow(RangeError);
      await expect(h.store.hit(subject, [])).rejects.toThrow(RangeError);
      await expect(h.store.hit(subject, [{ windowSeconds: 60, limit: 1 }, { windowSeconds: 60, limit: 2 }])).rejects.toThrow(RangeError);
    });

    it("holds at most 61 buckets per window: a 100,000/day subject hit 50,000 times", async () => {
      await setup();
      const w = windowsFor({ plan: "business" });
      let refused = 0;
      for (let batch = 0; batch < 50; batch++) {
        const pending: Promise<Decision>[] = [];
        for (let i = 0; i < 1000; i++) {
          now += 2600; // 50,000 requests over 1.5 days
          pending.push(h.store.hit(subject, w));
        }
        refused += (await Promise.all(pending)).filter((d) => d.outcome !== "admitted").length;
      }
      expect(refused).toBe(0);
      const buckets = await h.bucketCount(subject);
      expect(buckets).toBeLessThanOrEqual(2 * 61);
      expect(buckets).toBeGreaterThan(61); // the day window really is bucketed, not logged
    });
  });
}

describe("plans", () => {
  it("maps each plan to its per-minute and per-day windows", () => {
    expect(windowsFor({ plan: "free" })).toEqual(limits(60, 1_000));
    expect(windowsFor({ plan: "pro" })).toEqual(limits(300, 10_000));
    expect(windowsFor({ plan: "business" })).toEqual(limits(1_000, 100_000));
    expect(windowsFor({ plan: "enterprise", perMinute: 5_000, perDay: 2_000_000 })).toEqual(limits(5_000, 2_000_000));
    expect(windowsFor({ plan: "enterprise", perMinute: 5_000 })).toEqual(limits(5_000, PLANS.free.perDay));
    expect(ANONYMOUS_WINDOWS).toEqual(limits(60, 1_000));
  });
});

conformance("memory store", async (clock, ban) => {
  const store = createMemoryStore({ ban, clock });
  return { store, revoke: async (s) => store.revoke(s), bucketCount: async (s) => store.bucketCount(s) };
});

describe("redis store (private redis-server)", () => {
  let server: PrivateRedis;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url, { maxRetriesPerRequest: 0 });
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  beforeEach(async () => {
    await admin.flushall();
  });

  conformance("conformance", async (clock, ban) => ({
    store: createRedisStore({ redis: admin, ban, clock }),
    revoke: async (s) => void (await admin.set(redisKey(s, "revoked"), "1")),
    bucketCount: async (s) => {
      const fields = [...(await admin.hkeys(redisKey(s, "m"))), ...(await admin.hkeys(redisKey(s, "d")))];
      return fields.filter((f) => /^\d+$/.test(f)).length;
    },
  }));

  it("puts a TTL on every key it writes, bounded by what the key must remember", async () => {
    let now = T0;
    const store = createRedisStore({ redis: admin, ban: { after: 2, seconds: 900 }, clock: () => now });
    const w = limits(1, 1000);
    await store.hit("key:ttl-a", w, { generation: 0 }); // windows, and the key's record (last use)
    now += SEC;
    await store.hit("key:ttl-b", w);
    await store.hit("key:ttl-b", w); // limited: strikes
    await store.hit("key:ttl-c", w);
    await store.hit("key:ttl-c", w);
    await store.hit("key:ttl-c", w); // banned: ban + offences
    const keys = await admin.keys("*");
    const parts = new Set(keys.map((k) => k.split(":").at(-1)));
    expect(parts).toEqual(new Set(["m", "d", "strikes", "ban", "offences", "rec"]));
    for (const key of keys) {
      const ttl = await admin.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      const part = key.split(":").at(-1);
      const bound = { m: 61 * SEC, d: DAY + DAY_BUCKET, strikes: 61 * SEC, ban: 900 * SEC, offences: 900 * SEC + DAY, rec: 35 * DAY }[part!]!;
      expect(ttl, key).toBeLessThanOrEqual(bound);
    }
    expect(limiterKeys("key:x", w)).toEqual(["rl:{key:x}:revoked", "rl:{key:x}:ban", "rl:{key:x}:strikes", "rl:{key:x}:offences", "rl:{key:x}:rec", "rl:{key:x}:m", "rl:{key:x}:d"]);
  });
});

describe("memory store: bounded by idle eviction and LRU", () => {
  it("drops subjects whose state has expired and keeps at most maxSubjects", async () => {
    let now = T0;
    const store = createMemoryStore({ ban: NO_BAN, clock: () => now, maxSubjects: 3 });
    const w = limits(5, 10);
    for (const s of ["a", "b", "c", "d", "e"]) await store.hit(s, w);
    expect(store.size().subjects).toBe(3);
    // "c" was least recently used among the kept: a new subject pushes it out, "d" and "e" stay.
    await store.hit("d", w);
    await store.hit("f", w);
    expect((await store.hit("c", w)).windows[1]!.remaining).toBe(9);
    now += DAY + DAY_BUCKET + SEC; // everything expired
    await store.hit("g", w);
    await store.hit("g", w);
    expect(store.size().subjects).toBeLessThanOrEqual(2);
    expect(store.size().buckets).toBeLessThanOrEqual(4);
  });
});
