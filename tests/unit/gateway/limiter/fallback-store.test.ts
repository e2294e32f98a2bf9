/**
 * The fallback store's decisions when its primary fails, with the real memory store behind it and
 * an injected clock: faults per node, shares of the limit, share 0 and an unknown replica count,
 * and leaving an outage: when folds happen, per window, and the share that still caps meanwhile.
 * The primary is a store of our own interface that fails for chosen subjects (the Redis side of
 * the same behaviour runs against real servers: tests/integration/gateway/limiter/fold.test.ts,
 * tests/integration/gateway/redis-outage.test.ts, tests/faults/gateway/redis-*-failover.test.ts).
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createFallbackStore } from "../../../../gateway/limiter/fallback-store.ts";
import type { Decision, LimiterStore, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { FoldNotRunError, type RedisStore } from "../../../../gateway/limiter/redis-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";

const BAN = { after: 1000, seconds: 900 };
const T0 = Date.UTC(2030, 0, 1);

/**
 * A primary that admits everything, except subjects on a node marked failing; `calls` lists the
 * subjects it decided, `folds` what it was told ("subject windows×count", e.g. "a:1 60,86400×3"),
 * `ops` both in order ("hit a:1", "fold a:1 60,86400×3").
 */
function primaryOf(nodeOf: (subject: string) => string) {
  const failing = new Set<string>();
  const calls: string[] = [];
  const folds: string[] = [];
  const ops: string[] = [];
  /** Thrown by the next folds instead of folding (the node's failure throws "Command timed out"). */
  const fold = { error: undefined as Error | undefined };
  const store: RedisStore = {
    async fold(subject, windows, admitted) {
      folds.push(`${subject} ${windows.map((w) => w.windowSeconds).join(",")}×${admitted}`);
      ops.push(`fold ${folds.at(-1)}`);
      if (fold.error) throw fold.error;
      if (failing.has(nodeOf(subject))) throw new Error("Command timed out");
    },
    async hit(subject, windows): Promise<Decision> {
      calls.push(subject);
      ops.push(`hit ${subject}`);
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
  return { store, failing, calls, folds, ops, fold };
}

function setup(opts: { replicas?: number | undefined } = {}) {
  let now = T0;
  let replicas = "replicas" in opts ? opts.replicas : 2;
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
    liveReplicas: () => replicas,
    clock: () => now,
    probeIntervalMs: 1000,
  });
  return {
    store,
    primary,
    lines,
    advance: (ms: number) => (now += ms),
    failover: () => (masterA = "node-c"),
    setReplicas: (n: number) => (replicas = n),
  };
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

  it("a failed node that answers outside a decision (the probe's ping) is out of the outage, with no request for its subjects", async () => {
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

describe("leaving an outage", () => {
  /** node-a failed and a:1 was admitted `n` times from memory (the share of limit 10 over two replicas is 5). */
  async function afterOutage(n: number) {
    const t = setup();
    t.primary.failing.add("node-a");
    expect(await outcomes(t.store, "a:1", w(10), n)).toEqual(Array(n).fill("admitted"));
    t.primary.failing.clear();
    t.primary.calls.length = 0;
    return t;
  }

  it("folds what memory admitted once, before the subject's next decision, when the node answers", async () => {
    const { store, primary } = await afterOutage(3);
    await store.nodeAnswered("node-a");
    expect(primary.folds).toEqual(["a:1 60,86400×3"]);
    await store.hit("a:1", w(10));
    await store.nodeAnswered("node-a");
    await store.primaryAnswered();
    expect(primary.folds).toEqual(["a:1 60,86400×3"]);
    expect(primary.calls).toEqual(["a:1"]);
  });

  it("a request that finds its node back folds first, then asks the node", async () => {
    const { store, primary, advance, failover } = await afterOutage(2);
    failover(); // a:1 now on node-c, which never failed: its first request is no probe
    advance(1000);
    primary.ops.length = 0;
    await store.hit("a:1", w(10));
    expect(primary.ops).toEqual(["fold a:1 60,86400×2", "hit a:1"]);
  });

  it("the request that probes a node still marked down does not fold; its success does, before the next decision", async () => {
    const { store, primary, advance } = await afterOutage(2);
    advance(1000);
    primary.ops.length = 0;
    await store.hit("a:1", w(10));
    await store.hit("a:1", w(10));
    expect(primary.ops).toEqual(["hit a:1", "fold a:1 60,86400×2", "hit a:1"]);
    expect(store.outage()).toBe("none");
  });

  it("folds idle subjects too: the heartbeat path, without any request for them", async () => {
    const { store, primary } = await afterOutage(1);
    await store.primaryAnswered(); // node-a is still marked down: nothing to fold yet
    expect(primary.folds).toEqual([]);
    await store.nodeAnswered("node-a");
    expect(primary.folds).toEqual(["a:1 60,86400×1"]);
    expect(primary.calls).toEqual([]);
  });

  it("a fold Redis did not run keeps its count for the next try; the node is marked down meanwhile", async () => {
    const { store, primary } = await afterOutage(3);
    primary.fold.error = new FoldNotRunError(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    await store.nodeAnswered("node-a");
    expect(store.nodesInFallback()).toEqual(["node-a"]);
    primary.fold.error = undefined;
    await store.nodeAnswered("node-a");
    expect(primary.folds).toEqual(["a:1 60,86400×3", "a:1 60,86400×3"]);
    await store.primaryAnswered();
    expect(primary.folds).toHaveLength(2);
  });

  it("a fold whose reply was lost is not tried again (it may have run), and says so", async () => {
    const { store, primary, lines } = await afterOutage(3);
    primary.fold.error = new Error("Command timed out");
    await store.nodeAnswered("node-a");
    primary.fold.error = undefined;
    await store.nodeAnswered("node-a");
    expect(primary.folds).toEqual(["a:1 60,86400×3"]);
    expect(lines.map((l) => l.msg)).toContain("a fold's reply was lost: not retried, so redis may miss requests admitted from memory");
  });

  it("after an outage longer than a window, each window is told only what still lies in it", async () => {
    const { store, primary, advance } = await afterOutage(2);
    primary.failing.add("node-a");
    advance(61_000); // the minute window has forgotten those two; the day has not
    expect((await store.hit("a:1", w(10))).outcome).toBe("admitted");
    primary.failing.clear();
    await store.nodeAnswered("node-a");
    expect(primary.folds.sort()).toEqual(["a:1 60×1", "a:1 86400×3"]);
  });

  it("for a while after the outage this replica's share still caps what Redis admits; then Redis alone decides", async () => {
    const { store, primary, advance } = await afterOutage(5); // the whole share of 5
    await store.nodeAnswered("node-a");
    const capped = await store.hit("a:1", w(10));
    expect([capped.outcome, capped.windows[0]!.limit]).toEqual(["limited", 5]);
    expect(primary.calls).toEqual([]); // refused by the share: Redis counted nothing
    expect((await store.hit("b:1", w(10))).windows[0]!.limit).toBe(10); // another node's subjects: Redis alone
    advance(4000); // the settle period: four probe intervals
    expect((await store.hit("a:1", w(10))).windows[0]!.limit).toBe(10);
    expect(primary.calls).toEqual(["b:1", "a:1"]);
  });

  it("while settling, the share keeps the outage's replica count (a Redis back empty has not heard from the others yet)", async () => {
    const { store, setReplicas } = await afterOutage(5);
    await store.nodeAnswered("node-a");
    setReplicas(1); // only this replica heartbeated since
    expect((await store.hit("a:1", w(10))).outcome).toBe("limited");
  });

  it("after a failover the node that took over settles: its subjects are capped by the share for a while", async () => {
    const { store, failover } = await afterOutage(5);
    failover();
    await store.nodesChanged(); // the slot map no longer names node-a
    expect(store.outage()).toBe("none");
    expect((await store.hit("a:1", w(10))).outcome).toBe("limited");
  });
});
