/**
 * Folding what memory admitted back into a real, private redis-server when it returns: once,
 * seen by the subject's next decision, for idle subjects too (the heartbeat's path), kept for the
 * next try when Redis refused the fold, and never sent twice when its reply was lost.
 */
import { Redis } from "ioredis";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createFallbackStore, type FallbackStore } from "../../../../gateway/limiter/fallback-store.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { createRedisStore } from "../../../../gateway/limiter/redis-store.ts";
import { windowsForLimits } from "../../../../gateway/quota/plans.ts";
import { createRedisClient, isRedisReady } from "../../../../lib/redis-client.ts";
import { redisKey } from "../../../../lib/redis-keys.ts";
import { startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import { until } from "../../../../testkit/until.ts";

const BAN = { after: 1000, seconds: 900 };
const W = windowsForLimits({ perMinute: 10, perDay: 1000 });

let server: PrivateRedis;
let admin: Redis;
let client: Redis | undefined;
let store: FallbackStore | undefined;

beforeAll(async () => {
  server = await startRedis();
});
afterEach(async () => {
  await store?.close();
  client?.disconnect();
  admin?.disconnect();
});
afterAll(async () => {
  await server?.stop();
});

/**
 * A fallback store on its own client (a 1 s command timeout unless told: a loaded test machine
 * misses 100 ms), whose Redis is killed while `admitted` requests per subject are admitted from
 * memory, then started again; the store has not yet been told.
 */
async function afterOutage(admitted: Record<string, number>, commandTimeoutMs = 1000) {
  const c = (client = createRedisClient(server.url, { commandTimeoutMs }) as Redis);
  const warnings: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
  const s = (store = createFallbackStore({
    primary: createRedisStore({ redis: c, ban: BAN }),
    fallback: createMemoryStore({ ban: BAN, clock: Date.now }),
    logger,
    isPrimaryReady: () => isRedisReady(c),
  }));
  await until("the client is ready", () => isRedisReady(c));
  await server.kill();
  await until("the client has noticed", () => !isRedisReady(c));
  for (const [subject, n] of Object.entries(admitted)) {
    for (let i = 0; i < n; i++) expect((await s.hit(subject, W)).outcome).toBe("admitted");
  }
  await server.start();
  await until("the client is ready again", () => isRedisReady(c));
  admin = new Redis(server.url);
  return { store: s, warnings, counted: async (subject: string) => Number((await admin.hget(redisKey(subject, "m"), "t")) ?? 0) };
}

describe("folding into Redis after an outage", () => {
  it("counts what memory admitted once, and the subject's next decision in Redis sees it", async () => {
    const { store, counted } = await afterOutage({ "key:once": 3 });
    await store.primaryAnswered();
    expect(await counted("key:once")).toBe(3);
    const next = await store.hit("key:once", W);
    expect([next.outcome, next.windows[0]!.remaining]).toEqual(["admitted", 6]); // 10 − 3 folded − this one
    await store.primaryAnswered();
    expect(await counted("key:once")).toBe(4);
  });

  it("folds subjects no request asks for again, when Redis answers the heartbeat", async () => {
    const { store, counted } = await afterOutage({ "key:idle-1": 2, "key:idle-2": 1 });
    await store.primaryAnswered();
    expect([await counted("key:idle-1"), await counted("key:idle-2")]).toEqual([2, 1]);
  });

  it("a fold Redis refused (out of memory) keeps its count and goes through at the next try", async () => {
    const { store, counted } = await afterOutage({ "key:refused": 3 });
    await admin.config("SET", "maxmemory", "1");
    try {
      await store.primaryAnswered();
      expect(await counted("key:refused")).toBe(0);
      expect(store.outage()).toBe("full"); // the failed fold is a fault: memory decides meanwhile
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
    await store.primaryAnswered();
    expect(await counted("key:refused")).toBe(3);
  });

  it("a fold whose reply was lost (Redis paused past the command timeout) is not sent again: counted once", async () => {
    const { store, warnings, counted } = await afterOutage({ "key:lost": 3 }, 100);
    await admin.call("CLIENT", "PAUSE", "400", "WRITE");
    await store.primaryAnswered(); // the fold waits in Redis; the client gives up after 100 ms
    expect(warnings).toContain("a fold's reply was lost: not retried, so redis may miss requests admitted from memory");
    await until("the paused fold has run", async () => (await counted("key:lost")) === 3);
    await store.primaryAnswered();
    expect(await counted("key:lost")).toBe(3);
  });
});
