/**
 * The Redis store against real, private redis-servers: one command per request, NOSCRIPT
 * recovery, atomicity across gateway replicas, Redis TIME as the clock, fast failure and the
 * fallback to process memory through a Redis outage.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Cluster, Redis } from "ioredis";
import pino from "pino";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createFallbackStore, type FallbackStore } from "../../../../gateway/limiter/fallback-store.ts";
import type { Decision, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";
import { createRedisClient, DEFAULT_COMMAND_TIMEOUT_MS, isRedisReady, parseRedisUrl } from "../../../../lib/redis-client.ts";
import { createRedisStore, type RedisStore } from "../../../../gateway/limiter/redis-store.ts";
import { redisKey } from "../../../../lib/redis-keys.ts";
import { freePort } from "../../../../testkit/net.ts";
import { clientCommands, startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import { until } from "../../../../testkit/until.ts";

const BAN = { after: 1000, seconds: 900 };
const SEC = 1000;
const realNow = () => performance.timeOrigin + performance.now();
const elapsed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
  const start = performance.now();
  const value = await fn();
  return [value, performance.now() - start];
};

async function readyClient(url: string, opts: Parameters<typeof createRedisClient>[1] = {}): Promise<Redis> {
  const client = createRedisClient(url, opts) as Redis;
  if (client.status !== "ready") await new Promise((resolve) => client.once("ready", resolve));
  return client;
}

function collectingLogger() {
  const lines: { msg: string; level: number }[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, messages: () => lines.map((l) => l.msg) };
}

function fallbackMetrics() {
  const registers = [new Registry()];
  const faults = new Counter({ name: "faults_total", help: "faults", registers });
  const fallbackActive = new Gauge({ name: "fallback_active", help: "fallback", registers });
  const ambiguous = new Counter({ name: "ambiguous_total", help: "ambiguous", labelNames: ["reason", "answer"], registers });
  const redisDuration = new Histogram({ name: "redis_duration_seconds", help: "duration", registers });
  const value = async (metric: Counter | Gauge) => (await metric.get()).values[0]?.value ?? 0;
  return { metrics: { faults, fallbackActive, ambiguous, redisDuration }, faults: () => value(faults), active: () => value(fallbackActive) };
}

describe("redis store on a private redis-server", () => {
  let server: PrivateRedis;
  let admin: Redis;
  const clients: Redis[] = [];
  const client = async () => {
    const c = await readyClient(server.url);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url, { maxRetriesPerRequest: 0 });
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    admin?.disconnect();
    await server?.stop();
  });

  it("uses a fail-fast client: the default command timeout, no offline queue, no per-request retries", async () => {
    const c = await client();
    expect(c.options).toMatchObject({ commandTimeout: DEFAULT_COMMAND_TIMEOUT_MS, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 1000 });
    expect(isRedisReady(c)).toBe(true);
  });

  it("sends exactly one Redis command per decision", async () => {
    const store = createRedisStore({ redis: await client(), ban: BAN });
    const w = windowsForLimits({ perMinute: 5, perDay: 1000 });
    await store.hit("key:one-command", w); // the first use of a connection sends the script itself (EVAL)
    const decisions: Decision[] = [];
    const commands = await clientCommands(admin, async () => {
      for (let i = 0; i < 20; i++) decisions.push(await store.hit("key:one-command", w));
    });
    expect(decisions.filter((d) => d.outcome === "admitted")).toHaveLength(4);
    expect(commands).toEqual(Array(20).fill("evalsha"));
  });

  it("recovers from NOSCRIPT (SCRIPT FLUSH) by sending the script again, without losing counts", async () => {
    const store = createRedisStore({ redis: await client(), ban: BAN });
    const w = windowsForLimits({ perMinute: 10, perDay: 1000 });
    expect((await store.hit("key:noscript", w)).windows[0]!.remaining).toBe(9);
    await admin.script("FLUSH");
    let after: Decision | undefined;
    const commands = await clientCommands(admin, async () => {
      after = await store.hit("key:noscript", w);
    });
    expect(after).toMatchObject({ outcome: "admitted" });
    expect(after!.windows[0]!.remaining).toBe(8);
    expect(commands).toEqual(["evalsha", "eval"]); // NOSCRIPT, then the script itself
    expect((await store.hit("key:noscript", w)).windows[0]!.remaining).toBe(7);
  });

  it("admits exactly the limit across two gateway replicas under 100 concurrent requests", async () => {
    const a = createRedisStore({ redis: await client(), ban: BAN });
    const b = createRedisStore({ redis: await client(), ban: BAN });
    const w = windowsForLimits({ perMinute: 37, perDay: 1000 });
    const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).hit("key:replicas", w)));
    const admitted = decisions.filter((d) => d.outcome === "admitted");
    expect(admitted).toHaveLength(37);
    expect(new Set(admitted.map((d) => d.windows[0]!.remaining))).toEqual(new Set(Array.from({ length: 37 }, (_, i) => i)));
    expect(decisions.filter((d) => d.outcome === "limited")).toHaveLength(63);
  });

  it("takes its clock from Redis TIME, so replicas with skewed clocks agree", async () => {
    const a = createRedisStore({ redis: await client(), ban: BAN });
    const b = createRedisStore({ redis: await client(), ban: BAN });
    const w = windowsForLimits({ perMinute: 5, perDay: 1000 });
    const decisions: Decision[] = [];
    for (let i = 0; i < 8; i++) {
      // Replica a runs an hour fast, replica b an hour slow.
      const skew = i % 2 ? 3_600_000 : -3_600_000;
      const spy = vi.spyOn(Date, "now").mockImplementation(() => realNow() + skew);
      try {
        decisions.push(await (i % 2 ? a : b).hit("key:skew", w));
      } finally {
        spy.mockRestore();
      }
    }
    expect(decisions.map((d) => d.outcome)).toEqual([...Array(5).fill("admitted"), ...Array(3).fill("limited")]);
    for (const d of decisions) expect(Math.abs(d.nowMs - realNow())).toBeLessThan(5 * SEC);
    const retry = decisions.at(-1)!.retryAfterSeconds;
    expect(retry).toBeGreaterThanOrEqual(60);
    expect(retry).toBeLessThanOrEqual(61);
  });

  it("a slow Redis costs a lone gateway at most one command timeout, then decisions come from memory until the probe", async () => {
    const c = await readyClient(server.url, { commandTimeoutMs: 100 });
    clients.push(c);
    const { logger, messages } = collectingLogger();
    const { metrics, faults } = fallbackMetrics();
    const primary = counting(createRedisStore({ redis: c, ban: BAN }));
    const store = createFallbackStore({
      primary,
      fallback: createMemoryStore({ ban: BAN, clock: Date.now }),
      logger,
      metrics,
      isPrimaryReady: () => isRedisReady(c),
      probeIntervalMs: 60_000,
    });
    const w = windowsForLimits({ perMinute: 2, perDay: 1000 });
    await store.hit("key:slow", w);
    // Another client keeps Redis busy for a while (a long-running script).
    const blocker = new Redis(server.url, { maxRetriesPerRequest: 0 });
    await blocker.ping(); // connected first, so the script starts as soon as it is sent
    const busy = elapsed(() => blocker.eval("local i = 0 while i < 60000000 do i = i + 1 end return i", 0));
    await new Promise((r) => setTimeout(r, 20));
    const [first, firstMs] = await elapsed(() => store.hit("key:slow", w));
    expect(first.outcome).toBe("admitted");
    expect(firstMs).toBeGreaterThanOrEqual(90); // it did wait for the command timeout…
    expect(firstMs).toBeLessThan(2000); // …and no longer (a generous bound: this only catches hangs)
    const callsBefore = primary.calls;
    const second = await store.hit("key:slow", w);
    expect(primary.calls).toBe(callsBefore); // decided from memory without asking Redis again
    // Memory counted the request Redis admitted before the fault: with `first`, the limit of 2 is used up.
    expect([first.outcome, second.outcome]).toEqual(["admitted", "limited"]);
    expect(store.outage()).not.toBe("none");
    expect(await faults()).toBe(1);
    expect(messages().filter((m) => m === "redis unavailable, limiting from memory")).toHaveLength(1);
    const [, blockedMs] = await busy;
    expect(blockedMs).toBeGreaterThan(200); // Redis really was unresponsive for longer than the timeout
    blocker.disconnect();
  });

  it("with other gateways live, a decision Redis does not answer in time is refused (503), never decided from memory, and counted once", async () => {
    const c = await readyClient(server.url, { commandTimeoutMs: 100 });
    clients.push(c);
    const { logger, messages } = collectingLogger();
    const store = createFallbackStore({
      primary: createRedisStore({ redis: c, ban: BAN }),
      fallback: createMemoryStore({ ban: BAN, clock: Date.now }),
      logger,
      isPrimaryReady: () => isRedisReady(c),
      liveReplicas: () => 2,
    });
    const w = windowsForLimits({ perMinute: 5, perDay: 1000 });
    expect((await store.hit("key:late", w)).outcome).toBe("admitted");
    await admin.call("CLIENT", "PAUSE", "400", "WRITE");
    const late = await store.hit("key:late", w);
    expect([late.outcome, late.retryAfterSeconds, late.windows[0]!.limit]).toEqual(["unavailable", 1, 5]);
    expect([store.outage(), store.late()]).toEqual(["none", "full"]);
    expect(messages()).toEqual(["redis did not answer a decision in time: refused with 503, not decided from memory"]);
    // The script ran once the pause ended: Redis counted the refused request (erring toward refusing).
    await until("the paused script has run", async () => (await admin.hget(redisKey("key:late", "m"), "t")) === "2");
    const next = await store.hit("key:late", w);
    expect([next.outcome, next.windows[0]!.remaining]).toEqual(["admitted", 2]);
    expect(store.late()).toBe("none");
    expect(messages().at(-1)).toBe("redis answering decisions in time again");
  });
});

/** Counts the decisions that reach a store (the real one behind it still decides). */
function counting(store: RedisStore): RedisStore & { calls: number } {
  const wrapper = {
    calls: 0,
    hit(subject: string, windows: readonly WindowLimit[]) {
      wrapper.calls++;
      return store.hit(subject, windows);
    },
    peek: store.peek,
    fold: store.fold,
    close: () => store.close(),
  };
  return wrapper;
}

describe("fallback through a Redis outage (its own private redis-server)", () => {
  let server: PrivateRedis;
  let redis: Redis;
  let store: FallbackStore;
  const w: WindowLimit[] = windowsForLimits({ perMinute: 3, perDay: 1000 });

  beforeAll(async () => {
    server = await startRedis();
    // A 1 s command timeout, not 100 ms: a healthy Redis misses that on a loaded test
    // machine, and a decision taken from memory would break the exact counts asserted here.
    redis = await readyClient(server.url, { maxReconnectDelayMs: 100, commandTimeoutMs: 1000 });
  });
  afterAll(async () => {
    await store?.close();
    redis?.disconnect();
    await server?.stop();
  });

  it("keeps deciding from memory while Redis is down, logs and counts the fault once, and returns to Redis", async () => {
    const { logger, messages } = collectingLogger();
    const m = fallbackMetrics();
    const primary = counting(createRedisStore({ redis, ban: BAN }));
    store = createFallbackStore({
      primary,
      fallback: createMemoryStore({ ban: BAN, clock: Date.now }),
      logger,
      metrics: m.metrics,
      isPrimaryReady: () => isRedisReady(redis),
    });
    const minuteCount = async (admin: Redis, subject: string) => Number((await admin.hget(redisKey(subject, "m"), "t")) ?? 0);

    const before = new Redis(server.url, { maxRetriesPerRequest: 0 });
    expect((await store.hit("key:outage", w)).outcome).toBe("admitted");
    expect(await minuteCount(before, "key:outage")).toBe(1);
    before.disconnect();

    await server.kill();
    const callsAtKill = primary.calls;
    const decisions: Decision[] = [];
    const durations: number[] = [];
    for (let i = 0; i < 6; i++) {
      const [d, ms] = await elapsed(() => store.hit("key:during", w));
      decisions.push(d);
      durations.push(ms);
    }
    // Still limiting (from memory), never throwing; only the first may wait for the timeout.
    expect(decisions.map((d) => d.outcome)).toEqual(["admitted", "admitted", "admitted", "limited", "limited", "limited"]);
    // Only the first asks the dead server (failing fast); the rest go straight to memory.
    expect(primary.calls - callsAtKill).toBeLessThanOrEqual(1);
    for (const ms of durations) expect(ms).toBeLessThan(2000); // generous: catches hangs, not speed
    // A peek (GET /v1/me) reads memory meanwhile, at once.
    const [peeked, peekMs] = await elapsed(() => store.peek("key:during", w));
    expect(peeked.outcome).toBe("admitted");
    expect(peeked.windows.map((x) => x.remaining)).toEqual([0, 997]);
    expect(peekMs).toBeLessThan(500);
    expect(store.outage()).not.toBe("none");
    expect(await m.faults()).toBe(1);
    expect(await m.active()).toBe(1);
    expect(messages().filter((msg) => msg === "redis unavailable, limiting from memory")).toHaveLength(1);

    await server.start();
    const deadline = Date.now() + 5000;
    // Fresh subjects: leaving the outage, one whose share is used up is refused without asking Redis.
    for (let i = 0; store.outage() !== "none" && Date.now() < deadline; i++) {
      await store.hit(`key:probe-${i}`, w);
      if (store.outage() !== "none") await new Promise((r) => setTimeout(r, 25));
    }
    expect(store.outage()).toBe("none");
    expect(await m.active()).toBe(0);
    const after = new Redis(server.url, { maxRetriesPerRequest: 0 });
    try {
      expect((await store.hit("key:after", w)).outcome).toBe("admitted");
      expect((await store.hit("key:after", w)).outcome).toBe("admitted");
      expect(await minuteCount(after, "key:after")).toBe(2);
      expect((await store.peek("key:after", w)).windows.map((x) => x.remaining)).toEqual([1, 998]);
      expect(await minuteCount(after, "key:after")).toBe(2);
    } finally {
      after.disconnect();
    }
    expect(await m.faults()).toBe(1);
    expect(messages().filter((msg) => msg === "redis available again, limiting from redis")).toHaveLength(1);
  });
});

describe("fallback store decisions (stub primary)", () => {
  const decision: Decision = { outcome: "admitted", windows: [], binding: 0, retryAfterSeconds: 0, nowMs: 0 };
  afterEach(() => vi.restoreAllMocks());

  it("skips a failing primary for the probe interval, then tries it again", async () => {
    let now = 0;
    let fail = true;
    const primaryHit = vi.fn(async () => {
      if (fail) throw new Error("Command timed out");
      return decision;
    });
    const primary = { hit: primaryHit, peek: async () => decision, fold: async () => {}, close: async () => {} };
    const fallbackHit = vi.fn(async () => decision);
    const { logger, messages } = collectingLogger();
    const store = createFallbackStore({ primary, fallback: { hit: fallbackHit, peek: async () => decision, record: () => {}, learn: () => {}, elsewhere: () => undefined, close: async () => {} }, logger, clock: () => now, probeIntervalMs: 1000 });
    const w = windowsForLimits({ perMinute: 1, perDay: 1 });

    await store.hit("s", w);
    now = 999;
    await store.hit("s", w);
    expect(primaryHit).toHaveBeenCalledTimes(1);
    expect(fallbackHit).toHaveBeenCalledTimes(2);
    now = 1000;
    fail = false;
    await store.hit("s", w);
    expect(primaryHit).toHaveBeenCalledTimes(2);
    expect(fallbackHit).toHaveBeenCalledTimes(3); // leaving the outage, the share is asked first
    expect(messages()).toEqual(["redis unavailable, limiting from memory", "redis available again, limiting from redis"]);
  });

  it("does not mistake a caller's invalid windows for an outage", async () => {
    const memory = createMemoryStore({ ban: BAN, clock: () => 0 });
    const { logger, messages } = collectingLogger();
    const store = createFallbackStore({ primary: { ...memory, fold: async () => {} }, fallback: memory, logger });
    await expect(store.hit("s", [{ windowSeconds: 60, limit: 0 }])).rejects.toThrow(RangeError);
    expect(store.outage()).toBe("none");
    expect(messages()).toEqual([]);
  });
});

describe("on Redis Cluster (a private single-node cluster holding every slot)", () => {
  let dir: string;
  let node: ChildProcess;
  let admin: Redis;
  let cluster: Cluster;

  beforeAll(async () => {
    const port = await freePort();
    dir = mkdtempSync(path.join(tmpdir(), "limiter-cluster-"));
    node = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
        "--cluster-enabled", "yes", "--cluster-announce-ip", "127.0.0.1", "--cluster-config-file", "nodes.conf"],
      { stdio: "ignore" },
    );
    admin = new Redis(port, "127.0.0.1", { retryStrategy: (times) => (times < 100 ? 50 : null) });
    admin.on("error", () => {});
    await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    const deadline = Date.now() + 10_000;
    while (!String(await admin.call("CLUSTER", "INFO")).includes("cluster_state:ok")) {
      if (Date.now() > deadline) throw new Error("private cluster did not become ready");
      await new Promise((r) => setTimeout(r, 50));
    }
    cluster = createRedisClient(`redis+cluster://127.0.0.1:${port}`, { commandTimeoutMs: 1000 }) as Cluster;
    if (cluster.status !== "ready") await new Promise((resolve) => cluster.once("ready", resolve));
  });
  afterAll(async () => {
    cluster?.disconnect();
    admin?.disconnect();
    if (node && node.exitCode === null) await new Promise((resolve) => node.once("exit", resolve).kill("SIGTERM"));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the script through ioredis Cluster: every key of a subject is in one slot", async () => {
    // Redis Cluster refuses a script whose keys span slots (CROSSSLOT), even on one node.
    await expect(admin.eval("return redis.call('MGET', KEYS[1], KEYS[2])", 2, "a", "b")).rejects.toThrow(/CROSSSLOT/);
    const store = createRedisStore({ redis: cluster, ban: { after: 2, seconds: 900 } });
    const w = windowsForLimits({ perMinute: 2, perDay: 10 });
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) outcomes.push((await store.hit("key:clustered", w)).outcome);
    expect(outcomes).toEqual(["admitted", "admitted", "limited", "banned"]);
    expect((await admin.keys("*")).sort()).toEqual(["rl:{key:clustered}:ban", "rl:{key:clustered}:d", "rl:{key:clustered}:m", "rl:{key:clustered}:offences"]);
  });
});

describe("REDIS_URL forms", () => {
  it("parses single, Cluster and Sentinel URLs", () => {
    expect(parseRedisUrl("redis://:pw@127.0.0.1:6380/2")).toEqual({ mode: "single", url: "redis://:pw@127.0.0.1:6380/2" });
    expect(parseRedisUrl("redis+cluster://app:s%40cret@h1:7000,h2,[::1]:7002")).toEqual({
      mode: "cluster",
      tls: false,
      nodes: [
        { host: "h1", port: 7000 },
        { host: "h2", port: 6379 },
        { host: "::1", port: 7002 },
      ],
      username: "app",
      password: "s@cret",
    });
    expect(parseRedisUrl("rediss+sentinel://:pw@s1:26379,s2/mymaster")).toEqual({
      mode: "sentinel",
      tls: true,
      nodes: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26379 },
      ],
      password: "pw",
      name: "mymaster",
    });
    expect(() => parseRedisUrl("http://h:1")).toThrow();
    expect(() => parseRedisUrl("redis+sentinel://s1:26379")).toThrow(/primary's name/);
  });

  it("creates an ioredis Cluster for redis+cluster:// with the same fail-fast options", () => {
    const cluster = createRedisClient("redis+cluster://127.0.0.1:1,127.0.0.1:2") as Cluster;
    try {
      expect(cluster).toBeInstanceOf(Cluster);
      expect(cluster.options).toMatchObject({ enableOfflineQueue: false, redisOptions: { commandTimeout: DEFAULT_COMMAND_TIMEOUT_MS, maxRetriesPerRequest: 0 } });
      expect(isRedisReady(cluster)).toBe(false);
    } finally {
      cluster.disconnect();
    }
  });
});
