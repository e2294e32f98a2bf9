import { describe, expect, it } from "vitest";
import { createUsageCounter, requestsIn } from "../../../../gateway/usage/counter.ts";

const T0 = Date.UTC(2030, 0, 1, 10);
const HOUR = 3_600_000;

function counter(max = 100) {
  const drops: number[] = [];
  return { drops, c: createUsageCounter({ gatewayId: "gw-1", maxKeyHours: () => max, onDrop: (n) => drops.push(n) }) };
}

describe("usage counter", () => {
  it("counts per key and hour by outcome; a sealed report takes what it holds, once", () => {
    const { c } = counter();
    c.count("key_a", "2xx", T0 + 5);
    c.count("key_a", "2xx", T0 + 6);
    c.count("key_a", "limited", T0 + HOUR - 1);
    c.count("key_a", "4xx", T0 + HOUR);
    c.count("key_b", "forbidden", T0);
    const report = c.seal(100)!;
    expect(report.reportId).toMatch(/^[0-9a-f-]{36}$/);
    expect(report.gatewayId).toBe("gw-1");
    expect(report.buckets).toEqual([
      { keyId: "key_a", hour: new Date(T0).toISOString(), "2xx": 2, "4xx": 0, "5xx": 0, limited: 1, banned: 0, forbidden: 0 },
      { keyId: "key_a", hour: new Date(T0 + HOUR).toISOString(), "2xx": 0, "4xx": 1, "5xx": 0, limited: 0, banned: 0, forbidden: 0 },
      { keyId: "key_b", hour: new Date(T0).toISOString(), "2xx": 0, "4xx": 0, "5xx": 0, limited: 0, banned: 0, forbidden: 1 },
    ]);
    // Last use: admitted requests only.
    expect(report.lastUsed).toEqual([{ keyId: "key_a", at: new Date(T0 + HOUR).toISOString() }]);
    expect(requestsIn(report)).toBe(5);
    expect(c.seal(100)).toBeUndefined();
  });

  it("seals at most maxBuckets key-hours a report, the rest in the next", () => {
    const { c } = counter();
    for (let i = 0; i < 5; i++) c.count(`key_${i}`, "2xx", T0);
    expect(c.seal(2)!.buckets).toHaveLength(2);
    expect(c.pending()).toBe(3);
    expect(c.seal(2)!.buckets).toHaveLength(2);
    expect(c.seal(2)!.buckets).toHaveLength(1);
  });

  it("past the bound drops the requests of new key-hours (counted), while key-hours it holds go on counting", () => {
    const { c, drops } = counter(2);
    c.count("key_a", "2xx", T0);
    c.count("key_b", "2xx", T0);
    c.count("key_c", "2xx", T0);
    c.count("key_a", "2xx", T0 + HOUR);
    c.count("key_a", "5xx", T0);
    expect(drops).toEqual([1, 1]);
    expect(c.dropped()).toBe(2);
    expect(requestsIn(c.seal(10)!)).toBe(3);
  });

  it("reports a ban once, however many refused requests show it (their ends rounded to seconds)", () => {
    const { c } = counter();
    c.banned("key_a", T0 + 900_000, T0);
    c.banned("key_a", T0 + 901_000, T0 + 10);
    expect(c.seal(10)!.bans).toEqual([{ keyId: "key_a", until: new Date(T0 + 900_000).toISOString() }]);
    c.banned("key_a", T0 + 899_500, T0 + 20);
    expect(c.seal(10)).toBeUndefined();
    // A later ban (after the first ended) is a new one.
    c.banned("key_a", T0 + 3_600_000, T0 + 1_000_000);
    expect(c.seal(10)!.bans).toHaveLength(1);
  });
});
