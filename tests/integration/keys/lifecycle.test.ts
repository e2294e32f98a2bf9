/**
 * Keys as a product, end to end: an operator's backend changes keys through the key service's
 * admin API while two real gateways serve them, over a real Redis (one node, then a Cluster), and
 * without Redis. The gateways follow the key service's feed; with Redis the key service also
 * writes each change into the key's Redis record, which the limiter's one script reads.
 */
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisKey, subjectForKey } from "../../../lib/redis-keys.ts";
import { createTestKeys, keyIdOf, redisLimiter, startGateway, useGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { adminRequest } from "../../../testkit/key-service.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedisCluster } from "../../../testkit/redis-cluster.ts";
import { clientCommands, startRedis } from "../../../testkit/redis-server.ts";
import { until } from "../../../testkit/until.ts";

const TIMEOUT_MS = 60_000;

interface TestRedis {
  url: string;
  admin: Redis | Cluster;
  /** MONITOR is per node: only a single node shows every command. */
  single?: Redis;
  stop(): Promise<void>;
}

async function singleRedis(): Promise<TestRedis> {
  const server = await startRedis();
  const admin = new Redis(server.port, "127.0.0.1");
  return { url: server.url, admin, single: admin, stop: async () => (admin.disconnect(), await server.stop()) };
}

async function clusterRedis(): Promise<TestRedis> {
  const cluster = await startRedisCluster();
  const admin = new Cluster([{ host: "127.0.0.1", port: cluster.nodes[0]!.port }]);
  return { url: cluster.url, admin, stop: async () => (admin.disconnect(), await cluster.stop()) };
}

const get = (g: RunningGateway, token: string) => fetch(`${g.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${token}` } });
const minuteLimit = (res: Response) => /"minute";q=(\d+)/.exec(res.headers.get("ratelimit-policy") ?? "")?.[1];
/** Until `g` applies a minute limit of `limit` to `token` (the change's event reached it). */
const untilMinuteLimit = (g: RunningGateway, token: string, limit: string) =>
  until(`the gateway applies ${limit}/minute`, async () => minuteLimit(await get(g, token)) === limit, 2_000, 10);

describe.each([
  ["one Redis node", singleRedis],
  ["a Redis Cluster", clusterRedis],
] as const)("with %s and two gateways", (_name, startTestRedis) => {
  let redis: TestRedis;
  let pets: RunningPetService;
  let keys: TestKeys;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    [redis, pets] = await Promise.all([startTestRedis(), startPetService()]);
    keys = await createTestKeys({ redisUrl: redis.url });
    // A slow heartbeat: MONITOR then sees only the requests' commands.
    const limiter = redisLimiter({ redisUrl: redis.url, ban: { after: 3, seconds: 60 }, presence: { intervalMs: 60_000 } });
    [a, b] = await Promise.all([startGateway({ petServiceAddr: pets.address, keys, limiter }), startGateway({ petServiceAddr: pets.address, keys, limiter })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all([redis?.stop(), pets?.stop(), keys?.remove()]);
  });

  const admin = (method: string, path: string, body?: unknown) =>
    adminRequest(keys.service.url, method, path, { token: keys.service.adminToken, ...(body !== undefined && { body }) });

  it("a plan change: both replicas apply it from the key's next request, counts carry over, one Redis command per request", { timeout: TIMEOUT_MS }, async () => {
    const token = await keys.issue({ plan: "free" });
    const id = keyIdOf(token);
    for (const g of [a, b, a]) expect(minuteLimit(await get(g, token))).toBe("60");

    await keys.update(id, { plan: "enterprise", perMinute: 5, perDay: 50 });
    await untilMinuteLimit(b, token, "5"); // one request counted on the new plan
    expect((await get(a, token)).headers.get("ratelimit-policy")).toBe('"minute";q=5;w=60, "day";q=50;w=86400');
    // 3 before the change, 1 while waiting, this one: set below what it used, 429 until the window slides.
    expect((await get(b, token)).status).toBe(429);

    await keys.update(token, { plan: "pro" });
    await untilMinuteLimit(b, token, "300");
    // Counted per plan in force: the 429 under the enterprise limits, then the pro request.
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/gateway_limiter_decisions_total\{plan="enterprise",outcome="limited"\} [1-9]/);
    expect(metrics).toMatch(/gateway_limiter_decisions_total\{plan="pro",outcome="admitted"\} [1-9]/);

    if (redis.single) {
      const commands = await clientCommands(redis.single, async () => {
        for (const g of [a, b, a, b, a]) expect((await get(g, token)).status).toBe(200);
      }, (args) => args.some((arg) => arg.includes(`{key:${id}}`)));
      expect(commands).toEqual(Array(5).fill("evalsha"));
    }
  });

  it("bad changes are refused with the field named and change nothing, in the key service or Redis", { timeout: TIMEOUT_MS }, async () => {
    const token = await keys.issue({ plan: "business" });
    const id = keyIdOf(token);
    const revoked = keyIdOf(await keys.issue({ plan: "pro" }));
    await keys.revoke(revoked);
    expect(minuteLimit(await get(b, token))).toBe("1000");
    const snapshot = async () => [(await admin("GET", `/v1/keys/${id}`)).body, await redis.admin.hgetall(redisKey(subjectForKey(id), "rec"))];
    const before = await snapshot();
    const cases: [string, string, unknown, number, string][] = [
      ["PATCH", `/v1/keys/${id}`, { plan: "gold" }, 400, "invalid_request"],
      ["PATCH", `/v1/keys/${id}`, { plan: "enterprise", perMinute: 5 }, 400, "invalid_request"],
      ["PATCH", `/v1/keys/${id}`, { allowedCidrs: ["10.0.0.0/33"] }, 400, "invalid_request"],
      ["PATCH", `/v1/keys/${id}`, { scopes: ["pets:delete"] }, 400, "invalid_request"],
      ["PATCH", "/v1/keys/key_0000000000000000", { plan: "pro" }, 404, "not_found"],
      ["PATCH", `/v1/keys/${revoked}`, { plan: "pro" }, 409, "conflict"],
      ["POST", `/v1/keys/${revoked}/roll`, {}, 409, "conflict"],
      ["POST", `/v1/keys/${id}/roll`, { graceSeconds: -1 }, 400, "invalid_request"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const answer = await admin(method, path, body);
      expect({ path, body, status: answer.status, code: answer.body?.code }).toEqual({ path, body, status, code });
    }
    expect(await snapshot()).toEqual(before);
    expect(minuteLimit(await get(b, token))).toBe("1000");
  });

  it("roll: a new key, same id, plan and counts; the old one works until the grace ends, then 401 rolled on both", { timeout: TIMEOUT_MS }, async () => {
    const old = await keys.issue({ plan: "enterprise", perMinute: 50, perDay: 500, name: "Acme" });
    const id = keyIdOf(old);
    for (const g of [a, b]) expect((await get(g, old)).status).toBe(200);

    const rolled = await keys.roll(id, 3);
    const graceEnds = Date.now() + 3_000;
    expect(tokenPayload(rolled)).toMatchObject({ sub: id, plan: "enterprise", gen: 1 });
    // Both keys work meanwhile, on one count.
    for (const [g, token] of [[a, old], [b, rolled], [a, rolled], [b, old]] as const) expect((await get(g, token)).status).toBe(200);
    expect((await get(a, rolled)).headers.get("x-ratelimit-remaining")).toBe(String(50 - 7));

    await new Promise((r) => setTimeout(r, Math.max(0, graceEnds - Date.now()) + 200));
    for (const g of [a, b]) {
      const res = await get(g, old);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { message: string }).message).toMatch(/rolled/);
      expect((await get(g, rolled)).status).toBe(200);
    }
    expect((await admin("GET", `/v1/keys/${id}`)).body).toMatchObject({ name: "Acme", generation: 1 });
  });

  it("usage: plan and limits in force, used and remaining per window, ban and last use, from Redis", { timeout: TIMEOUT_MS }, async () => {
    const token = await keys.issue({ plan: "enterprise", perMinute: 2, perDay: 20 });
    const id = keyIdOf(token);
    expect((await admin("GET", `/v1/keys/${id}/usage`)).body).toEqual({
      keyId: id,
      plan: "enterprise",
      limits: { perMinute: 2, perDay: 20 },
      used: { minute: 0, day: 0 },
      remaining: { minute: 2, day: 20 },
      banned: false,
      bannedUntil: null,
      lastUsedAt: null,
    });
    const statuses = [];
    for (const g of [a, b, a, b, a]) statuses.push((await get(g, token)).status);
    expect(statuses).toEqual([200, 200, 429, 429, 429]); // the third refusal bans (BAN_AFTER 3 here)
    const used = (await admin("GET", `/v1/keys/${id}/usage`)).body;
    expect(used).toMatchObject({ used: { minute: 2, day: 2 }, remaining: { minute: 0, day: 18 }, banned: true });
    expect(Date.parse(used.bannedUntil) - Date.now()).toBeGreaterThan(30_000);
    expect(Math.abs(Date.parse(used.lastUsedAt) - Date.now())).toBeLessThan(60_000);
  });

  it("Redis lost a key's record and revocation: the gateways still apply the key service's plan and refuse the revoked key", { timeout: TIMEOUT_MS }, async () => {
    const token = await keys.issue({ plan: "free" });
    const revoked = await keys.issue({ plan: "free" });
    await keys.update(token, { plan: "business" });
    await keys.revoke(revoked);
    await untilMinuteLimit(b, token, "1000");
    await until("the revocation holds", async () => (await get(b, revoked)).status === 401, 2_000, 10);

    // Only this test's keys: what a Redis that lost its data no longer has.
    await redis.admin.del(redisKey(subjectForKey(keyIdOf(token)), "rec"));
    await redis.admin.del(redisKey(subjectForKey(keyIdOf(revoked)), "revoked"));
    for (const g of [a, b]) {
      expect(minuteLimit(await get(g, token))).toBe("1000"); // never the token's own (stale) plan
      expect((await get(g, revoked)).status).toBe(401);
    }
  });
});

describe("without Redis: one gateway following the feed", () => {
  const ctx = useGateway();

  it("a plan change, a roll and a revocation reach the gateway within a second", { timeout: TIMEOUT_MS }, async () => {
    const [keys, g] = [ctx.keys(), ctx.gateway()];
    const token = await keys.issue({ plan: "free" });
    for (let i = 0; i < 3; i++) expect((await get(g, token)).status).toBe(200);

    await keys.update(token, { plan: "business" });
    await until("the gateway applies the new plan", async () => minuteLimit(await get(g, token)) === "1000", 1_000, 10);
    // Counts carried over: 3 + the requests while waiting + this one.
    expect(Number((await get(g, token)).headers.get("x-ratelimit-remaining"))).toBeLessThanOrEqual(1000 - 5);

    const rolled = await keys.roll(token, 0);
    await until("the old key is refused", async () => (await get(g, token)).status === 401, 1_000, 10);
    expect(minuteLimit(await get(g, rolled))).toBe("1000");

    await keys.revoke(rolled);
    await until("the revoked key is refused", async () => (await get(g, rolled)).status === 401, 1_000, 10);
  });
});
