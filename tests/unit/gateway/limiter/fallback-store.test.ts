/**
 * The fallback store's decisions when its primary fails, with the real memory store behind it and
 * an injected clock: faults per node, shares of the limit, share 0 and an unknown replica count.
 * The primary is a store of our own interface that fails for chosen subjects (the Redis side of
 * the same behaviour runs against real servers: tests/integration/gateway/redis-outage.test.ts,
 * tests/faults/gateway/redis-*-failover.test.ts).
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createFallbackStore } from "../../../../gateway/limiter/fallback-store.ts";
import type { Decision, LimiterStore, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";

const BAN = { after: 1000, seconds: 900 };
const T0 = Date.UTC(2030, 0, 1);

/** A primary that admits everything, except subjects on a node marked failing. */
function primaryOf(nodeOf: (subject: string) => string) {
  const failing = new Set<string>();
  const calls: string[] = [];
  const store: LimiterStore = {
    async hit(subject, windows): Promise<Decision> {
      calls.push(subject);
      if (failing.has(nodeOf(subject))) throw new Error("Command timed out");
      return {
        outcome: "admitted",
        windows: windows.map((w) => ({ ...w, remaining: w.limit - 1, resetAt: 0, releaseAtMs: 0, refused: false })),
        binding: 0,
        retryAfterSeconds: 0,
        nowMs: T0,
      };
    },
    close: async () => {},
  };
  return { store, failing, calls };
}

function setup(opts: { replicas?: number | undefined } = {}) {
  let now = T0;
  // The master of "a:" subjects; a failover replaces it (`failover`).
  let masterA = "node-a";
  const nodeOf = (subject: string) => (subject.startsWith("a:") ? masterA : "node-b");
  const primary = primaryOf(nodeOf);
  const lines: { msg: string; node?: string }[] = [];
  const store = createFallbackStore({
    primary: primary.store,
    fallback: createMemoryStore({ ban: BAN, clock: () => now }),
    logger: pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    nodeOf,
    isNode: (node) => node === masterA || node === "node-b",
    liveReplicas: () => ("replicas" in opts ? opts.replicas : 2),
    clock: () => now,
    probeIntervalMs: 1000,
  });
  return { store, primary, lines, advance: (ms: number) => (now += ms), failover: () => (masterA = "node-c") };
}

const w = (perMinute: number): WindowLimit[] => windowsForLimits({ perMinute, perDay: 10_000 });
const outcomes = async (store: LimiterStore, subject: string, windows: WindowLimit[], n: number) => {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await store.hit(subject, windows)).outcome);
  return out;
};

describe("fallback store", () => {
  it("a failing node sends only its own subjects to memory; the others stay on the primary", async () => {
    const { store, primary, lines } = setup();
    primary.failing.add("node-a");
    const windows = w(10);
    await store.hit("a:1", windows);
    primary.calls.length = 0;
    await outcomes(store, "a:1", windows, 3);
    await outcomes(store, "b:1", windows, 3);
    expect(primary.calls).toEqual(["b:1", "b:1", "b:1"]); // node-a skipped for the probe interval
    expect(store.outage()).toBe("partial");
    expect(store.nodesInFallback()).toEqual(["node-a"]);
    expect(lines.filter((l) => l.msg === "redis unavailable, limiting from memory").map((l) => l.node)).toEqual(["node-a"]);
  });

  it("tries a failed node again after the probe interval and returns to it", async () => {
    const { store, primary, lines, advance } = setup();
    primary.failing.add("node-a");
    const windows = w(10);
    await store.hit("a:1", windows);
    primary.failing.clear();
    advance(999);
    await store.hit("a:1", windows);
    expect(store.outage()).toBe("partial");
    advance(1);
    await store.hit("a:1", windows);
    expect(store.outage()).toBe("none");
    expect(lines.map((l) => l.msg)).toEqual(["redis unavailable, limiting from memory", "redis available again, limiting from redis"]);
  });

  it("a failed node that a failover replaced ends its outage, though it never answers again", async () => {
    const { store, primary, lines, advance, failover } = setup();
    primary.failing.add("node-a");
    const windows = w(10);
    await store.hit("a:1", windows);
    expect(store.nodesInFallback()).toEqual(["node-a"]);
    failover();
    advance(1000);
    expect((await store.hit("a:1", windows)).windows[0]!.limit).toBe(10); // the new master decides
    expect(store.outage()).toBe("none");
    expect(store.nodesInFallback()).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual(["redis unavailable, limiting from memory", "redis node replaced by a failover, limiting from redis"]);
  });

  it("a failed node that answers outside a decision (the heartbeat's ping) is out of the outage, with no request for its subjects", async () => {
    const { store, primary, lines } = setup();
    primary.failing.add("node-a");
    await store.hit("a:1", w(10));
    store.nodeAnswered("node-a");
    expect(store.outage()).toBe("none");
    expect(lines.map((l) => l.msg)).toEqual(["redis unavailable, limiting from memory", "redis available again, limiting from redis"]);
  });

  it("from memory admits floor(limit / replicas) and shows that share in the decision", async () => {
    const { store, primary } = setup({ replicas: 3 });
    primary.failing.add("node-a");
    const windows = w(10);
    expect(await outcomes(store, "a:1", windows, 5)).toEqual(["admitted", "admitted", "admitted", "limited", "limited"]);
    expect((await store.hit("a:1", windows)).windows[0]!.limit).toBe(3);
  });

  it("counts what the primary admitted against the share once the node fails", async () => {
    const { store, primary } = setup({ replicas: 2 });
    const windows = w(10);
    expect(await outcomes(store, "a:1", windows, 4)).toEqual(Array(4).fill("admitted"));
    primary.failing.add("node-a");
    // Share 5, 4 already admitted through the primary: one more.
    expect(await outcomes(store, "a:1", windows, 3)).toEqual(["admitted", "limited", "limited"]);
  });

  it("a share of 0 admits nothing and counts nothing: unavailable, retry after the probe interval", async () => {
    const { store, primary } = setup({ replicas: 2 });
    primary.failing.add("node-a");
    const decision = await store.hit("a:1", w(1));
    expect(decision).toMatchObject({ outcome: "unavailable", retryAfterSeconds: 1 });
    expect(decision.windows.map((x) => [x.limit, x.remaining])).toEqual([
      [0, 0],
      [5000, 0],
    ]);
  });

  it("without a known replica count, admits nothing from memory", async () => {
    const { store, primary } = setup({ replicas: undefined });
    primary.failing.add("node-a");
    expect((await store.hit("a:1", w(100))).outcome).toBe("unavailable");
    expect((await store.hit("b:1", w(100))).outcome).toBe("admitted"); // its node is fine
  });
});
