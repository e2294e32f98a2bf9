/**
 * keys/usage.ts: a key's usage against the plan the registry has in force, from what a gateway
 * without Redis published (usage.json) or from Redis (a real redis-server).
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../gateway/limiter/memory-store.ts";
import { publishUsage } from "../../../gateway/limiter/usage-file.ts";
import { windowsForLimits } from "../../../gateway/quota/plans.ts";
import { createKeyOperations } from "../../../keys/operations/index.ts";
import { keyUsage } from "../../../keys/usage.ts";
import { createLogger } from "../../../lib/logger.ts";
import { redisKey, subjectForKey } from "../../../lib/redis-keys.ts";
import { freePort } from "../../../testkit/net.ts";
import { useKeyRegistry, useRevocationRedis, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);
const T0 = Date.UTC(2030, 0, 1);

const create = async (input: Parameters<ReturnType<typeof createKeyOperations>["create"]>[0]) =>
  (await createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: () => T0 }).create(input, "cli")).record;

describe("keyUsage", () => {
  it("without Redis reads what a memory-limited gateway published", async () => {
    const record = await create({ plan: "enterprise", perMinute: 3, perDay: 30 });
    const now = T0 + 5_000;
    const store = createMemoryStore({ ban: { after: 1, seconds: 60 }, clock: () => now });
    const w = windowsForLimits({ perMinute: 3, perDay: 30 });
    for (let i = 0; i < 4; i++) await store.hit(subjectForKey(record.id), w); // 3 admitted, then a ban
    const stop = publishUsage({ store, keysDir: keysDir(), clock: () => now, logger: createLogger("test", "silent"), intervalMs: 60_000 });
    stop(); // writes once
    expect(await keyUsage(record, keysDir(), { now: now + 1000 })).toEqual({
      keyId: record.id,
      plan: "enterprise",
      limits: { perMinute: 3, perDay: 30 },
      used: { minute: 3, day: 3 },
      remaining: { minute: 0, day: 27 },
      banned: true,
      bannedUntil: new Date(now + 60_000).toISOString(),
      lastUsedAt: new Date(now).toISOString(),
    });
    // A minute later the minute window has slid; the day has not.
    expect((await keyUsage(record, keysDir(), { now: now + 61_000 })).used).toEqual({ minute: 0, day: 3 });
  });

  it("with nothing published: nothing used, last use from the registry", async () => {
    const record = { ...(await create({ plan: "pro" })), lastUsedAt: T0 + 7 };
    expect(await keyUsage(record, keysDir(), { now: T0 })).toMatchObject({
      plan: "pro",
      limits: { perMinute: 300, perDay: 10_000 },
      used: { minute: 0, day: 0 },
      banned: false,
      lastUsedAt: new Date(T0 + 7).toISOString(),
    });
  });

  describe("with Redis", () => {
    const redis = useRevocationRedis();

    it("reads the limiter's windows and last use; the plan is the registry's", async () => {
      const record = await create({ plan: "business" });
      const client = new Redis(redis.url());
      try {
        await client.hset(redisKey(subjectForKey(record.id), "rec"), { lu: String(T0 + 99), p: "free", m: "1", d: "1" });
        const usage = await keyUsage(record, keysDir(), { redisUrl: redis.url() });
        expect(usage).toMatchObject({ plan: "business", limits: { perMinute: 1000, perDay: 100_000 }, used: { minute: 0, day: 0 }, lastUsedAt: new Date(T0 + 99).toISOString() });
      } finally {
        client.disconnect();
      }
    });

    it("an unreachable Redis is a clear error", async () => {
      const record = await create({ plan: "free" });
      await expect(keyUsage(record, keysDir(), { redisUrl: `redis://127.0.0.1:${await freePort()}` })).rejects.toThrowError(/cannot read usage from Redis/);
    });
  });
});
