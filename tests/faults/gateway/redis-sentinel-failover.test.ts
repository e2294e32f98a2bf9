/**
 * No over-admission through a Sentinel failover: two gateways on a Sentinel-managed primary
 * (REDIS_URL redis+sentinel://); the primary is killed with SIGKILL. Until the Sentinel has
 * promoted the replica and the gateways have reconnected, each admits only its share of a key's
 * limit from memory, sequentially and concurrently; then both limit exactly in the new primary,
 * where the counters written before the kill were replicated.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisKey, subjectForKey } from "../../../lib/redis-keys.ts";
import type { Limiter } from "../../../gateway/limiter/create-limiter.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedisSentinel, type PrivateSentinel } from "../../../testkit/redis-sentinel.ts";
import { createTestKeys, startRedisGateway, untilPastShares, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { until } from "../../../testkit/until.ts";

let pets: RunningPetService;
let keys: TestKeys;
let sentinel: PrivateSentinel;
const gateways: { g: RunningGateway; limiter: Limiter }[] = [];

beforeAll(async () => {
  [pets, keys, sentinel] = await Promise.all([startPetService(), createTestKeys(), startRedisSentinel()]);
  for (let i = 0; i < 2; i++) {
    const { gateway: g, limiter } = await startRedisGateway({ petServiceAddr: pets.address, keys, redisUrl: sentinel.url });
    gateways.push({ g, limiter });
  }
});

afterAll(async () => {
  await Promise.all(gateways.map(({ g }) => g.close()));
  await pets?.stop();
  await keys?.remove();
  await sentinel?.stop();
});

const limit6 = () => keys.issue({ plan: "enterprise", perMinute: 6, perDay: 1000 });
let turn = 0;
const get = (key: string) =>
  fetch(`${gateways[turn++ % 2]!.g.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } }).then(async (res) => {
    await res.arrayBuffer();
    return { status: res.status, limit: res.headers.get("x-ratelimit-limit") };
  });

describe("Sentinel failover with two gateways", () => {
  let before: string;
  let killedAt: number;

  beforeAll(async () => {
    await until("both heartbeats count two replicas", () => gateways.every(({ limiter }) => limiter.liveReplicas() === 2));
    before = await limit6();
    expect([(await get(before)).status, (await get(before)).status]).toEqual([200, 200]);
    killedAt = Date.now();
    await sentinel.primary.kill();
    await until("both gateways limit from memory", async () => {
      await Promise.all([get(await limit6()), get(await limit6())]); // an outage is noticed by the requests it affects
      return gateways.every(({ limiter }) => limiter.outage() !== "none");
    });
  });

  it("while the primary is gone: a limit-6 key gets at most 6, sequentially, each gateway its share of 3", async () => {
    const key = await limit6();
    const responses = [];
    for (let i = 0; i < 20; i++) responses.push(await get(key));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(6);
    expect(responses.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    expect(new Set(responses.map((r) => r.limit))).toEqual(new Set(["3"])); // all decided from memory
  });

  it("while the primary is gone: at most 6 under 60 concurrent requests", async () => {
    const key = await limit6();
    const responses = await Promise.all(Array.from({ length: 60 }, () => get(key)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(6);
    expect(responses.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    expect(new Set(responses.map((r) => r.limit))).toEqual(new Set(["3"]));
  });

  it("after the promotion both limit exactly in the new primary, which holds what was counted before", async () => {
    await until("the Sentinel names the replica as primary", async () => (await sentinel.primaryPort()) === sentinel.replica.port);
    await until("both gateways decide in Redis again", async () => {
      await Promise.all([get(await limit6()), get(await limit6())]);
      return gateways.every(({ limiter }) => limiter.outage() === "none");
    });
    console.log(`sentinel failover: both gateways back in Redis ${Date.now() - killedAt} ms after the kill`);
    await untilPastShares(gateways.map(({ g }) => g.url), limit6, 3);
    const key = await limit6();
    const responses = await Promise.all(Array.from({ length: 30 }, () => get(key)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(6);
    expect(new Set(responses.map((r) => r.limit))).toEqual(new Set(["6"]));
    const promoted = new Redis(sentinel.replica.port, "127.0.0.1");
    try {
      expect(await promoted.hget(redisKey(subjectForKey(tokenPayload(before).sub as string), "m"), "t")).toBe("2");
    } finally {
      promoted.disconnect();
    }
  });
});
