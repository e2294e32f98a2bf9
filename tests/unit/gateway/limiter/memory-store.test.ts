/**
 * What the memory store keeps of Redis's replies for the fallback store (`learn`, `elsewhere`):
 * the window's count less this replica's own admissions, until the window's newest request stops
 * counting. The decisions themselves are the conformance suite's.
 */
import { describe, expect, it } from "vitest";
import type { Decision, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";

const BAN = { after: 1000, seconds: 900 };
const T0 = Date.UTC(2030, 0, 1);
const W: WindowLimit[] = windowsForLimits({ perMinute: 40, perDay: 1000 });

/** A reply of Redis's for W: `counted` requests in each window, its newest expiring at `resetAtMs`. */
const reply = (counted: number, resetAtMs: number): Decision => ({
  outcome: "admitted",
  windows: W.map((w) => ({ ...w, remaining: Math.max(0, w.limit - counted), resetAt: Math.ceil(resetAtMs / 1000), releaseAtMs: resetAtMs, refused: false })),
  binding: 0,
  retryAfterSeconds: 0,
  nowMs: T0,
});

describe("memory store: what Redis said", () => {
  it("keeps the window's count less its own admissions, replaced by each reply, until the window's newest request expires", () => {
    let now = T0;
    const store = createMemoryStore({ ban: BAN, clock: () => now });
    expect(store.elsewhere("k", W)).toBeUndefined();
    store.learn("k", W, reply(25, T0 + 61_000), true); // its own one, of 25
    expect(store.elsewhere("k", W)!.map((e) => e.n)).toEqual([24, 24]);
    store.learn("k", W, reply(30, T0 + 61_000), true);
    expect(store.elsewhere("k", W)!.map((e) => e.n)).toEqual([28, 28]);
    expect(store.bucketCount("k")).toBe(2); // both counted as its own
    now = T0 + 61_000;
    expect(store.elsewhere("k", W)).toBeUndefined();
  });

  it("a reply it did not count (a refusal, or a request its share already counted) is learnt without counting", () => {
    const store = createMemoryStore({ ban: BAN, clock: () => T0 });
    store.learn("k", W, reply(40, T0 + 61_000), false);
    expect(store.elsewhere("k", W)!.map((e) => e.n)).toEqual([40, 40]);
    expect(store.bucketCount("k")).toBe(0);
  });

  it("forgets it when the window holds no more than its own", () => {
    const store = createMemoryStore({ ban: BAN, clock: () => T0 });
    store.learn("k", W, reply(3, T0 + 61_000), false);
    store.learn("k", W, reply(1, T0 + 61_000), true);
    expect(store.elsewhere("k", W)).toBeUndefined();
  });

  it("keeps a subject it learnt of until that expires, though it counted nothing of it", () => {
    let now = T0;
    const store = createMemoryStore({ ban: BAN, clock: () => now, maxSubjects: 10 });
    store.learn("k", W, reply(10, T0 + 61_000), false);
    now = T0 + 30_000;
    for (let i = 0; i < 5; i++) store.record(`other:${i}`, W); // each sweeps the least recently used
    expect(store.elsewhere("k", W)!.map((e) => e.n)).toEqual([10, 10]);
  });
});
