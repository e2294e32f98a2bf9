/**
 * Redis slow is not Redis down: two real gateway processes on one real redis-server, bursts of
 * 100 concurrent GET /v1/pets split over both for an enterprise key of 40 a minute (a fresh key
 * each round). With the default REDIS_COMMAND_TIMEOUT_MS a burst on this loaded machine never
 * trips it: exactly 40 admitted every round, no 5xx; nor when Redis stalls for less than the
 * timeout (CLIENT PAUSE WRITE, DEBUG SLEEP) in the middle of a burst. When it stalls for longer, a
 * decision not answered in time is refused with 503 and Retry-After, never decided from a memory
 * share: still at most 40 admitted, every one of them decided in Redis.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRESENCE_KEY, redisKey, subjectForKey } from "../../../lib/redis-keys.ts";
import { useGatewayProcesses, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { concurrentGets, type Reply } from "../../../testkit/gateway.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { histogramBuckets, parseExposition, type Sample } from "../../../testkit/promql.ts";
import { clientCommands, startRedis, withRedisClient, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { bucketSpread } from "../../../testkit/stats.ts";
import { until } from "../../../testkit/until.ts";

const LIMIT = 40;
const ROUNDS = 20;
let redis: PrivateRedis;
/** Connected beforehand, so a stall starts the moment it is asked for. */
let admin: Redis;

beforeAll(async () => {
  redis = await startRedis({ args: ["--enable-debug-command", "local"] });
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.stop();
});

const scrape = async (gateways: readonly GatewayProcess[]): Promise<Sample[]> =>
  (await Promise.all(gateways.map(async (g) => parseExposition(await (await fetch(`${g.url}/metrics`)).text())))).flat();
const total = (samples: readonly Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
const counted = (key: string) =>
  withRedisClient(redis.port, async (c) => Number((await c.hget(redisKey(subjectForKey(tokenPayload(key).sub as string), "m"), "t")) ?? 0));

/** Ways to stall Redis for `ms`; each resolves once the stall is over. */
const STALLS: Record<string, (ms: number) => Promise<unknown>> = {
  // Holds every client's writes (the limiter's script is one), not reads.
  "CLIENT PAUSE WRITE": async (ms) => {
    await admin.call("CLIENT", "PAUSE", String(ms), "WRITE");
    await new Promise((r) => setTimeout(r, ms));
  },
  // Redis does nothing at all meanwhile (its reply comes after the sleep).
  "DEBUG SLEEP": (ms) => admin.call("DEBUG", "SLEEP", String(ms / 1000)),
};

/**
 * A burst of 100 on a fresh key of 40 a minute. With `stall`, 50 go first; as soon as the first
 * of them is answered Redis stalls and the other 50 go, so that decisions are on their way to it
 * throughout the stall; the burst ends with the stall.
 */
async function burst(gateways: readonly GatewayProcess[], freshKey: () => Promise<string>, stall?: () => Promise<unknown>) {
  const key = await freshKey();
  const urls = gateways.map((g) => g.url);
  let stalled: Promise<unknown> | undefined;
  let second: Promise<Reply[]> = Promise.resolve([]);
  const first = await concurrentGets(urls, key, stall ? 50 : 100, (done) => {
    if (!stall || done > 1) return;
    stalled = stall();
    second = concurrentGets(urls, key, 50);
  });
  const replies = [...first, ...(await second)];
  await stalled;
  return { key, replies, admitted: replies.filter((r) => r.status === 200).length };
}

const fivexx = (replies: readonly Reply[]) => replies.filter((r) => r.status >= 500);

/** The limiter scripts the gateways send Redis while `fn` runs (MONITOR), their heartbeats aside. */
/** The gateways' scripts while `fn` runs: not their heartbeats, nor the key service's (its `{keys}` keys: the feed's seq). */
const scriptsWhile = async (fn: () => Promise<unknown>) =>
  (await clientCommands(admin, async () => void (await fn()), (args) => !args.includes(PRESENCE_KEY) && !args.some((a) => a.startsWith("rl:{keys}:")))).filter(
    (c) => c === "eval" || c === "evalsha",
  );

describe("with the default command timeout", () => {
  const { gateways, keys } = useGatewayProcesses(2, () => redis.url);
  const freshKey = () => keys().issue({ plan: "enterprise", perMinute: LIMIT, perDay: 100_000 });

  it(`admits exactly ${LIMIT} of every burst of 100 over two gateways, ${ROUNDS} rounds, never a 5xx`, async () => {
    const before = await scrape(gateways());
    const admitted: number[] = [];
    const failed: Reply[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { replies, admitted: n } = await burst(gateways(), freshKey);
      admitted.push(n);
      failed.push(...fivexx(replies));
    }
    const after = await scrape(gateways());
    const latency = bucketSpread(histogramBuckets(before, "gateway_limiter_redis_duration_seconds"), histogramBuckets(after, "gateway_limiter_redis_duration_seconds"));
    console.log(`bursts, default timeout: admitted per round ${admitted.join(" ")}; ${latency.count} decisions, p99 ≤ ${latency.atMost(0.99) * 1000} ms, largest in (${latency.largest.map((s) => s * 1000).join(", ")}] ms`);
    expect(failed).toEqual([]);
    expect(admitted).toEqual(Array(ROUNDS).fill(LIMIT));
    expect(total(after, "gateway_limiter_ambiguous_decisions_total")).toBe(0);
    // One round trip per request: one script call each, whatever the outcome.
    expect(await scriptsWhile(() => burst(gateways(), freshKey))).toHaveLength(100);
  });

  it.each(Object.keys(STALLS))(`admits exactly ${LIMIT} of every burst when Redis stalls shorter than the timeout mid-burst (%s 200 ms), never a 5xx`, async (how) => {
    const before = await scrape(gateways());
    const admitted: number[] = [];
    const failed: Reply[] = [];
    for (let round = 0; round < 5; round++) {
      const { replies, admitted: n } = await burst(gateways(), freshKey, () => STALLS[how]!(200));
      admitted.push(n);
      failed.push(...fivexx(replies));
    }
    const latency = bucketSpread(histogramBuckets(before, "gateway_limiter_redis_duration_seconds"), histogramBuckets(await scrape(gateways()), "gateway_limiter_redis_duration_seconds"));
    console.log(`bursts, ${how} 200 ms: admitted per round ${admitted.join(" ")}; decisions waited up to (${latency.largest.map((s) => s * 1000).join(", ")}] ms`);
    expect(latency.largest[1]).toBeGreaterThanOrEqual(0.2); // the stall did hold decisions (> 150 ms)
    expect(failed).toEqual([]);
    expect(admitted).toEqual(Array(5).fill(LIMIT));
  });
});

describe("with a command timeout shorter than the stall", () => {
  const { gateways, keys } = useGatewayProcesses(2, () => redis.url, { REDIS_COMMAND_TIMEOUT_MS: "100" });
  const freshKey = () => keys().issue({ plan: "enterprise", perMinute: LIMIT, perDay: 100_000 });

  it.each(Object.keys(STALLS))("never admits from memory what Redis did not answer in time (%s 300 ms): 503 with Retry-After, at most the limit, all of it decided in Redis", async (how) => {
    const before = await scrape(gateways());
    const rounds: { admitted: number; unavailable: number; counted: number }[] = [];
    const replies: Reply[] = [];
    // Each decision is sent once, never again when its reply is late (MONITOR: 100 script calls a burst).
    const sent = await scriptsWhile(async () => {
      for (let round = 0; round < 5; round++) {
        const b = await burst(gateways(), freshKey, () => STALLS[how]!(300));
        replies.push(...b.replies);
        rounds.push({ admitted: b.admitted, unavailable: fivexx(b.replies).length, counted: await counted(b.key) });
      }
    });
    expect(sent).toHaveLength(500);
    const after = await scrape(gateways());
    console.log(`bursts, ${how} 300 ms, 100 ms timeout: ${rounds.map((r) => `${r.admitted} admitted/${r.unavailable} 503/${r.counted} counted`).join(", ")}`);
    for (const r of rounds) {
      expect(r.admitted).toBeLessThanOrEqual(LIMIT);
      // Redis counts every admission; a refused decision whose script ran after the timeout too.
      expect(r.counted).toBeGreaterThanOrEqual(r.admitted);
      expect(r.counted).toBeLessThanOrEqual(Math.min(LIMIT, r.admitted + r.unavailable));
    }
    // Every admission was Redis's: a memory share would show 20 as the limit.
    expect(new Set(replies.filter((r) => r.status === 200).map((r) => r.limit))).toEqual(new Set([String(LIMIT)]));
    const unavailable = fivexx(replies);
    expect(unavailable.length).toBeGreaterThan(0); // the stall outlasted the timeout
    for (const r of unavailable) expect([r.status, r.code, Number(r.retryAfter) >= 1]).toEqual([503, "service_unavailable", true]);
    expect(replies.filter((r) => ![200, 429, 503].includes(r.status))).toEqual([]);
    const ambiguous = (answer: string) =>
      total(after, "gateway_limiter_ambiguous_decisions_total", { reason: "timeout", answer }) - total(before, "gateway_limiter_ambiguous_decisions_total", { reason: "timeout", answer });
    expect([ambiguous("unavailable"), ambiguous("memory")]).toEqual([unavailable.length, 0]);
    expect(total(after, "gateway_limiter_fallback_active")).toBe(0);

    // Once Redis answers in time again, both gateways are ready again and decide in Redis.
    for (const g of gateways()) {
      await until("the gateway is ready", async () => (await fetch(`${g.url}/readyz`)).status === 200);
      expect(await concurrentGets([g.url], await freshKey(), 1)).toMatchObject([{ status: 200, limit: String(LIMIT) }]);
    }
  });
});
