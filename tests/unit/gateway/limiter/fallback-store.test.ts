/**
 * The fallback store's decisions when its primary fails, with the real memory store behind it and
 * an injected clock: faults per node, shares of the limit, share 0 and an unknown replica count,
 * and leaving an outage: when folds happen, per window, and the share that still caps meanwhile;
 * a decision not answered in time (refused, never guessed from memory, unless the replica is
 * alone); and an outage that starts mid-window, decided with what Redis last said.
 * The primary is a store of our own interface that fails for chosen subjects (the Redis side of
 * the same behaviour runs against real servers: tests/integration/gateway/limiter/fold.test.ts,
 * tests/integration/gateway/redis-outage.test.ts, tests/faults/gateway/redis-*-failover.test.ts).
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { createFallbackStore } from "../../../../gateway/limiter/fallback-store.ts";
import type { Decision, LimiterStore, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { AmbiguousDecisionError, FoldNotRunError, type RedisStore } from "../../../../gateway/limiter/redis-store.ts";
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
  /** Nodes whose decisions get no reply: "late" ones time out, "lost" ones lose the connection. */
  const unanswered = new Map<string, "late" | "lost">();
  const calls: string[] = [];
  const folds: string[] = [];
  const ops: string[] = [];
  /** Thrown by the next folds instead of folding (the node's failure throws "Command timed out"). */
  const fold = { error: undefined as Error | undefined };
  const store: RedisStore = {
    peek: () => Promise.reject(new Error("these tests do not peek")),
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
      const how = unanswered.get(nodeOf(subject));
      if (how) throw new AmbiguousDecisionError(new Error(how === "late" ? "Command timed out" : "Connection is closed."));
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
  return { store, failing, unanswered, calls, folds, ops, fold };
}

function setup(opts: { replicas?: number | undefined; unconnected?: string } = {}) {
  let now = T0;
  let replicas = "replicas" in opts ? opts.replicas : 2;
  // The master of "a:" subjects; a failover replaces it (`failover`).
  let masterA = "node-a";
  const nodeOf = (subject: string) => (subject.startsWith("a:") ? masterA : "node-b");
  const primary = primaryOf(nodeOf);
  const lines: { msg: string; node?: string }[] = [];
  const metrics = recordingMetrics();
  const store = createFallbackStore({
    primary: primary.store,
    fallback: createMemoryStore({ ban: BAN, clock: () => now }),
    logger: pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    metrics,
    nodeOf,
    isNode: (node) => node === masterA || node === "node-b",
    isNodeReady: (node) => node !== opts.unconnected,
    liveReplicas: () => replicas,
    clock: () => now,
    probeIntervalMs: 1000,
  });
  return {
    store,
    primary,
    lines,
    metrics,
    advance: (ms: number) => (now += ms),
    failover: () => (masterA = "node-c"),
    setReplicas: (n: number) => (replicas = n),
  };
}

/** The fallback store's metrics, as what they were told: faults counted, the ambiguous decisions by "reason answer". */
function recordingMetrics() {
  const seen = { faults: 0, ambiguous: [] as string[], fallbackActive: 0 };
  return {
    seen,
    faults: { inc: () => void seen.faults++ },
    fallbackActive: { set: (...args: unknown[]) => void (seen.fallbackActive = Number(args.at(-1))) },
    ambiguous: {
      inc: (...args: unknown[]) => {
        const labels = args[0] as Record<"reason" | "answer", string>;
        seen.ambiguous.push(`${labels.reason} ${labels.answer}`);
      },
    },
    redisDuration: { observe: () => {} },
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

describe("a decision not answered in time", () => {
  it("with other replicas live, is refused with 503 and Retry-After, never decided from memory; the next asks Redis again", async () => {
    const { store, primary, lines, metrics } = setup({ replicas: 2 });
    primary.unanswered.set("node-a", "late");
    const windows = w(10);
    const late = await store.hit("a:1", windows);
    expect(late).toMatchObject({ outcome: "unavailable", retryAfterSeconds: 1 });
    expect(late.windows.map((x) => [x.limit, x.remaining])).toEqual([
      [10, 0],
      [10_000, 0],
    ]);
    expect((await store.hit("a:1", windows)).outcome).toBe("unavailable");
    expect(primary.calls).toEqual(["a:1", "a:1"]); // no probe interval in memory: each asks Redis
    expect([store.outage(), store.late(), store.nodesLate()]).toEqual(["none", "partial", ["node-a"]]);
    expect(metrics.seen).toMatchObject({ faults: 2, ambiguous: ["timeout unavailable", "timeout unavailable"], fallbackActive: 0 });
    expect(lines.map((l) => l.msg)).toEqual(["redis did not answer a decision in time: refused with 503, not decided from memory"]);

    primary.unanswered.clear();
    expect((await store.hit("a:1", windows)).outcome).toBe("admitted");
    expect(store.late()).toBe("none");
    expect(lines.at(-1)!.msg).toBe("redis answering decisions in time again");
  });

  it("counts, in case its script ran, against what this replica may admit in a later outage", async () => {
    const { store, primary } = setup({ replicas: 2 });
    const windows = w(10);
    expect(await outcomes(store, "a:1", windows, 2)).toEqual(["admitted", "admitted"]);
    primary.unanswered.set("node-a", "late");
    expect(await outcomes(store, "a:1", windows, 2)).toEqual(["unavailable", "unavailable"]);
    primary.unanswered.clear();
    primary.failing.add("node-a");
    // Share 5: 2 admitted and 2 that may have been counted: one more.
    expect(await outcomes(store, "a:1", windows, 3)).toEqual(["admitted", "limited", "limited"]);
  });

  it("on a lone replica, is decided from memory (no other replica decides in Redis meanwhile)", async () => {
    const { store, primary, metrics } = setup({ replicas: 1 });
    primary.unanswered.set("node-a", "late");
    const decision = await store.hit("a:1", w(10));
    expect([decision.outcome, decision.windows[0]!.limit]).toEqual(["admitted", 10]);
    expect([store.outage(), store.late()]).toEqual(["partial", "none"]);
    expect(metrics.seen.ambiguous).toEqual(["timeout memory"]);
  });

  it("while its node's connection is down (a Cluster node reconnecting), is the outage's: decided from memory", async () => {
    const { store, primary, metrics } = setup({ replicas: 2, unconnected: "node-a" });
    primary.unanswered.set("node-a", "late");
    expect((await store.hit("a:1", w(10))).windows[0]!.limit).toBe(5);
    expect([store.outage(), store.late()]).toEqual(["partial", "none"]);
    expect(metrics.seen.ambiguous).toEqual(["timeout memory"]);
  });

  it("lost with the connection, is decided from memory as in any outage", async () => {
    const { store, primary, metrics } = setup({ replicas: 2 });
    primary.unanswered.set("node-a", "lost");
    expect((await store.hit("a:1", w(10))).windows[0]!.limit).toBe(5);
    expect(store.outage()).toBe("partial");
    expect(metrics.seen.ambiguous).toEqual(["connection_lost memory"]);
  });

  it("ends its lateness when the node answers outside a decision (the probe's ping)", async () => {
    const { store, primary } = setup({ replicas: 2 });
    primary.unanswered.set("node-a", "late");
    await store.hit("a:1", w(10));
    await store.nodeAnswered("node-a");
    expect(store.late()).toBe("none");
  });
});

describe("an outage that starts mid-window", () => {
  /**
   * Two replicas on one primary that counts as Redis does (a memory store of its own: the
   * conformance suite holds the two stores to the same decisions); `down` fails every decision.
   */
  function twoReplicas() {
    let now = T0;
    const clock = () => now;
    const redis = createMemoryStore({ ban: BAN, clock });
    const state = { down: false };
    const primary: RedisStore = {
      async hit(subject, windows) {
        if (state.down) throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
        return redis.hit(subject, windows);
      },
      peek: (subject, windows) => redis.peek(subject, windows),
      async fold() {},
      close: async () => {},
    };
    const replica = () =>
      createFallbackStore({
        primary,
        fallback: createMemoryStore({ ban: BAN, clock }),
        logger: pino({ level: "silent" }),
        isPrimaryReady: () => !state.down,
        liveReplicas: () => 2,
        clock,
      });
    return { a: replica(), b: replica(), state, advance: (ms: number) => (now += ms) };
  }
  const admitted = async (store: LimiterStore, windows: WindowLimit[], n: number) =>
    (await outcomes(store, "k", windows, n)).filter((o) => o === "admitted").length;

  // A goes 5 beyond its share of 20 (so admits no more); B has its share's 15 left, less what it heard A admitted.
  it.each([
    ["25 through A, then 5 through B: together exactly the limit of 40 (B heard of all 30: 10 left)", "A then B", 10],
    ["5 through B, then 25 through A: 45, 5 over, what B could not have heard of", "B then A", 15],
  ])("%s", async (_, order, byB) => {
    const { a, b, state } = twoReplicas();
    const windows = w(40);
    const before = order === "A then B" ? [await admitted(a, windows, 25), await admitted(b, windows, 5)] : [await admitted(b, windows, 5), await admitted(a, windows, 25)];
    expect(before).toEqual(order === "A then B" ? [25, 5] : [5, 25]);
    state.down = true;
    expect([await admitted(a, windows, 20), await admitted(b, windows, 20)]).toEqual([0, byB]);
  });

  it("a replica that heard the others used the limit up refuses (429) until their requests leave the window", async () => {
    const { a, b, state, advance } = twoReplicas();
    const windows = w(4);
    expect([await admitted(a, windows, 4), (await b.hit("k", windows)).outcome]).toEqual([4, "limited"]);
    state.down = true;
    const refused = await b.hit("k", windows);
    expect([refused.outcome, refused.windows[0]!.limit, refused.windows[0]!.remaining]).toEqual(["limited", 2, 0]);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(61);
    advance(61_000);
    expect(await admitted(b, windows, 3)).toBe(2); // its share again, the others' requests gone
  });
});
