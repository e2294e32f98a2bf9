/**
 * No over-admission while Redis is down: two gateways that shared a private redis-server keep
 * serving after it is killed, each admitting only its share of a key's limit (the limit over the
 * live replicas its heartbeat counted), so together they admit at most the limit; nor when it
 * returns: both go back to Redis within a few hundred milliseconds, folding into it what they
 * admitted from memory, and a key probed across the switch still gets at most its limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Limiter } from "../../../gateway/limiter/create-limiter.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedis, withRedisClient, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { createTestKeys, startRedisGateway, untilPastShares, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { until } from "../../../testkit/until.ts";

let pets: RunningPetService;
let keys: TestKeys;
let redis: PrivateRedis;
const running: RunningGateway[] = [];

beforeAll(async () => {
  [pets, keys, redis] = await Promise.all([startPetService(), createTestKeys(), startRedis()]);
});

afterAll(async () => {
  await Promise.all(running.map((g) => g.close()));
  await pets?.stop();
  await keys?.remove();
  await redis?.stop();
});

async function gateway(): Promise<{ g: RunningGateway; limiter: Limiter }> {
  const { gateway: g, limiter } = await startRedisGateway({ petServiceAddr: pets.address, keys, redisUrl: redis.url });
  running.push(g);
  return { g, limiter };
}

const get = (g: RunningGateway, key: string) => fetch(`${g.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
const limit6 = () => keys.issue({ plan: "enterprise", perMinute: 6, perDay: 1000 });

describe("two gateways, Redis killed", () => {
  let a: { g: RunningGateway; limiter: Limiter };
  let b: { g: RunningGateway; limiter: Limiter };
  let before: string;

  beforeAll(async () => {
    [a, b] = [await gateway(), await gateway()];
    await until("both heartbeats count two replicas", () => a.limiter.liveReplicas() === 2 && b.limiter.liveReplicas() === 2);
    // Four of six admitted through Redis before the outage, two through each gateway.
    before = await limit6();
    for (const g of [a.g, b.g, a.g, b.g]) expect((await get(g, before)).status).toBe(200);
    await redis.kill();
  });

  it("a limit-6 key gets at most 6 in total, sequentially, 3 through each gateway", async () => {
    const key = await limit6();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await get(i % 2 ? a.g : b.g, key)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(a.limiter.outage() !== "none" && b.limiter.outage() !== "none").toBe(true);
  });

  it("a limit-6 key gets at most 6 in total under 60 concurrent requests", async () => {
    const key = await limit6();
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => get(i % 2 ? a.g : b.g, key)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    // From memory each gateway shows its share of the limit.
    expect(new Set(responses.map((r) => r.headers.get("x-ratelimit-limit")))).toEqual(new Set(["3"]));
  });

  it("what each gateway admitted through Redis before the outage counts against its share", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await get(i % 2 ? a.g : b.g, before)).status);
    // 4 before + 1 more through each gateway (its share is 3, it had admitted 2) = 6.
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
  });

  it("a share of 0 (limit 1 over two gateways) admits nothing: 503 with Retry-After, never 200", async () => {
    const key = await keys.issue({ plan: "enterprise", perMinute: 1, perDay: 1000 });
    for (const g of [a.g, b.g]) {
      const res = await get(g, key);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { code: string }).code).toBe("service_unavailable");
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get("x-ratelimit-remaining")).toBe("0");
    }
  });

  it("across its return a key probed through both gateways gets at most its limit, and Redis counts what memory admitted", async () => {
    // From memory: `probed` 2 through each gateway (1 of each share left), `idle` 1 through each.
    const [probed, idle] = [await limit6(), await limit6()];
    for (const g of [a.g, b.g, a.g, b.g]) expect((await get(g, probed)).status).toBe(200);
    for (const g of [a.g, b.g]) expect((await get(g, idle)).status).toBe(200);

    const statuses: number[] = [];
    const back: (number | undefined)[] = [undefined, undefined];
    let servingAt: number | undefined;
    let stopAt = Infinity;
    const probing = (async () => {
      for (let i = 0; Date.now() < stopAt; i++) {
        statuses.push((await get(i % 2 ? a.g : b.g, probed)).status);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const watching = (async () => {
      while (back.includes(undefined)) {
        [a, b].forEach(({ limiter }, i) => {
          if (servingAt !== undefined && back[i] === undefined && limiter.outage() === "none") back[i] = Date.now() - servingAt;
        });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const serving = until("redis-server answers", async () => (await withRedisClient(redis.port, (c) => c.ping()).catch(() => "")) === "PONG", 10_000, 5);
    await Promise.all([redis.start(), serving.then(() => (servingAt = Date.now()))]);
    await watching;
    stopAt = Date.now() + 1500; // past the 1 s during which each gateway's share still caps
    await probing;
    console.log(`redis restart: both gateways back on Redis ${back[0]} ms and ${back[1]} ms after it answered again; ${statuses.length} probes across the switch`);

    expect(4 + statuses.filter((s) => s === 200).length).toBe(6);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    for (const ms of back) expect(ms).toBeLessThan(1000); // ~250 ms expected; a loaded machine needs room
    const admin = new (await import("ioredis")).Redis(redis.url);
    try {
      const counted = (key: string) => admin.hget(`rl:{key:${tokenPayload(key).sub as string}}:m`, "t");
      expect([await counted(probed), await counted(idle)]).toEqual(["6", "2"]);
    } finally {
      admin.disconnect();
    }
  });

  it("back on Redis: exactly 6 again across both, counted in Redis", async () => {
    await untilPastShares([a.g.url, b.g.url], limit6, 3);
    const key = await limit6();
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => get(i % 2 ? a.g : b.g, key)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(6);
    expect(new Set(responses.map((r) => r.headers.get("x-ratelimit-limit")))).toEqual(new Set(["6"]));
    const { Redis } = await import("ioredis");
    const admin = new Redis(redis.url);
    try {
      expect(await admin.hget(`rl:{key:${tokenPayload(key).sub as string}}:m`, "t")).toBe("6");
    } finally {
      admin.disconnect();
    }
  });
});

describe("a gateway that never reached Redis", () => {
  it("does not know its share, so it answers 503 (never admits) until Redis answers", async () => {
    const dead = await startRedis();
    await dead.kill();
    const { gateway: g, limiter } = await startRedisGateway({ petServiceAddr: pets.address, keys, redisUrl: dead.url });
    running.push(g);
    expect((await fetch(`${g.url}/readyz`)).status).toBe(503); // before any request noticed it
    const key = await limit6();
    const res = await get(g, key);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).not.toBeNull();
    expect(limiter.liveReplicas()).toBeUndefined();
    await dead.start();
    try {
      await until("the gateway admits through Redis", async () => (await get(g, key)).status === 200);
      await until("its heartbeat counts itself", () => limiter.liveReplicas() === 1);
    } finally {
      await dead.stop();
    }
  });
});

describe("readiness after an outage", () => {
  it("turns ready again when Redis returns, without /v1 traffic (a load balancer sends none to an unready replica)", async () => {
    const own = await startRedis();
    const { gateway: g } = await startRedisGateway({ petServiceAddr: pets.address, keys, redisUrl: own.url });
    running.push(g);
    try {
      expect((await fetch(`${g.url}/readyz`)).status).toBe(200);
      await own.kill();
      expect((await get(g, await limit6())).status).not.toBe(500); // a request notices the outage
      expect((await fetch(`${g.url}/readyz`)).status).toBe(503);
      await own.start();
      // From here on only the probe asks.
      await until("/readyz answers 200", async () => (await fetch(`${g.url}/readyz`)).status === 200, 10_000);
    } finally {
      await own.stop();
    }
  });
});
