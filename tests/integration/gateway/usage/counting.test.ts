/**
 * Usage history end to end (issue 40, point 1 and 2): two real gateways limiting in one real Redis
 * count each key's requests by outcome and report them to a real key service (SQLite, then a
 * private PostgreSQL database); the history adds up exactly to what the clients saw, by outcome.
 * GET /v1/me and /v1/me/usage answer as the public OpenAPI says, to a banned key too, without
 * counting against the key's quota; a request still costs one Redis round trip with reporting on,
 * and /v1/me one read-only script (MONITOR).
 */
import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminRequest } from "../../../../testkit/key-service.ts";
import { createTestKeys, keyIdOf, redisLimiter, startGateway, type RunningGateway, type TestKeys } from "../../../../testkit/gateway.ts";
import { recordingFetch } from "../../../../testkit/openapi-validator.ts";
import { LIMITER_LUA, PEEK_LUA } from "../../../../gateway/limiter/redis-store.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../../testkit/postgres.ts";
import { clientCommands, startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import { until } from "../../../../testkit/until.ts";
import { emptyTally, historyTotals, outcomeOf, type Tally } from "./tally.ts";

let pets: RunningPetService;
let redis: PrivateRedis;
let pg: TestDatabase;

beforeAll(async () => {
  [pets, redis, pg] = await Promise.all([startPetService(), startRedis(), createTestDatabase()]);
});
afterAll(async () => {
  await Promise.all([pets?.stop(), redis?.stop()]);
  await pg?.drop();
});

describe.each([
  ["SQLite", false],
  ["PostgreSQL", true],
] as const)("two gateways on Redis, the key service on %s", (_name, onPostgres) => {
  let keys: TestKeys;
  let gateways: RunningGateway[];
  const recorders: ReturnType<typeof recordingFetch>[] = [];

  beforeAll(async () => {
    keys = await createTestKeys({ redisUrl: redis.url, ...(onPostgres && { db: pg.url }) });
    gateways = await Promise.all(
      [1, 2].map(() => startGateway({ petServiceAddr: pets.address, keys, limiter: redisLimiter({ redisUrl: redis.url, ban: { after: 3, seconds: 60 } }) })),
    );
    recorders.push(...gateways.map((g) => recordingFetch(g.url)));
  });
  afterAll(async () => {
    await Promise.all(gateways?.map((g) => g.close()) ?? []);
    await keys?.remove();
    expect(recorders.flatMap((r) => r.problems())).toEqual([]);
  });

  /** `n` requests of `path` with `key`, alternating gateways (each answer checked against the public OpenAPI); the outcomes as the client saw them. */
  async function requests(key: string, path: string, n: number, tally = emptyTally()): Promise<Tally> {
    for (let i = 0; i < n; i++) {
      const res = await recorders[i % 2]!.fetch(`${gateways[i % 2]!.url}${path}`, { headers: { Authorization: `Bearer ${key}` } });
      tally[outcomeOf(res.status, res.status >= 400 ? ((await res.json()) as { code: string }).code : (await res.arrayBuffer(), undefined))]++;
    }
    return tally;
  }

  const history = async (key: string, query = "") =>
    (await adminRequest(keys.service.url, "GET", `/v1/keys/${keyIdOf(key)}/usage/history${query}`, { token: keys.service.adminToken })).body;

  it("the history adds up exactly to the requests made through both gateways, by outcome", { timeout: 60_000 }, async () => {
    const plain = await keys.issue({ plan: "business" });
    const scopeless = await keys.issue({ plan: "pro", scopes: ["pets:write"] });
    const tight = await keys.issue({ plan: "enterprise", perMinute: 2, perDay: 1000 });
    const expected = new Map<string, Tally>();
    const t = await requests(plain, "/v1/pets?limit=1", 7);
    expected.set(plain, await requests(plain, "/v1/pets/987654321", 5, t));
    expected.set(scopeless, await requests(scopeless, "/v1/pets?limit=1", 4));
    expected.set(tight, await requests(tight, "/v1/pets?limit=1", 12));
    expect(expected.get(plain)).toMatchObject({ "2xx": 7, "4xx": 5 });
    expect(expected.get(scopeless)).toMatchObject({ forbidden: 4 });
    expect(expected.get(tight)).toMatchObject({ "2xx": 2 });
    expect(expected.get(tight)!.limited).toBeGreaterThan(0);
    expect(expected.get(tight)!.banned).toBeGreaterThan(0);
    for (const [key, tally] of expected) {
      await until("the gateways' reports add up", async () => JSON.stringify(historyTotals(await history(key))) === JSON.stringify(tally));
      expect(historyTotals(await history(key, "?granularity=day"))).toEqual(tally);
    }
    // Both gateways saw the ban: one key.banned event.
    const events = (await adminRequest(keys.service.url, "GET", "/v1/events?limit=1000", { token: keys.service.adminToken })).body.items;
    expect(events.filter((e: { type: string; keyId: string }) => e.type === "key.banned" && e.keyId === keyIdOf(tight))).toHaveLength(1);
    // Last use reached the registry from the reports.
    expect((await keys.service.registry.getKey(keyIdOf(plain)))!.lastUsedAt).not.toBeNull();
  });

  const me = async (key: string, i = 0) => {
    const res = await recorders[i % 2]!.fetch(`${gateways[i % 2]!.url}/v1/me`, { headers: { Authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("GET /v1/me shows the key's windows as the limiter counts them, with no scope; /v1/me/usage its history", { timeout: 30_000 }, async () => {
    const key = await keys.issue({ plan: "pro", scopes: ["pets:write"], name: "portal user" });
    const ownTally = await requests(key, "/v1/pets?limit=1", 3);
    const me = await recorders[0]!.fetch(`${gateways[0]!.url}/v1/me`, { headers: { Authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({
      keyId: keyIdOf(key),
      name: "portal user",
      plan: "pro",
      limits: { perMinute: 300, perDay: 10_000 },
      scopes: ["pets:write"],
      used: { minute: 3, day: 3 },
      remaining: { minute: 297, day: 9_997 },
      banned: false,
      bannedUntil: null,
    });
    ownTally["2xx"]++;
    await until("the history has the four requests", async () => JSON.stringify(historyTotals(await history(key))) === JSON.stringify(ownTally));
    const usage = await recorders[1]!.fetch(`${gateways[1]!.url}/v1/me/usage`, { headers: { Authorization: `Bearer ${key}` } });
    expect(usage.status).toBe(200);
    const body = (await usage.json()) as { granularity: string; buckets: Tally[] };
    expect(body.granularity).toBe("hour");
    expect(historyTotals(body)).toEqual(ownTally);
    const daily = await recorders[0]!.fetch(`${gateways[0]!.url}/v1/me/usage?granularity=day`, { headers: { Authorization: `Bearer ${key}` } });
    expect(((await daily.json()) as { granularity: string }).granularity).toBe("day");
    const bad = await recorders[0]!.fetch(`${gateways[0]!.url}/v1/me/usage?granularity=week`, { headers: { Authorization: `Bearer ${key}` } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { details: unknown }).details).toEqual([{ field: "query.granularity", message: "must be hour or day" }]);
    const noKey = await recorders[0]!.fetch(`${gateways[0]!.url}/v1/me`);
    expect(noKey.status).toBe(401);
    await noKey.arrayBuffer();
  });

  it("a banned key gets GET /v1/me (banned, until when) and its history from /v1/me/usage", { timeout: 30_000 }, async () => {
    const key = await keys.issue({ plan: "enterprise", perMinute: 2, perDay: 1000 });
    const tally = await requests(key, "/v1/pets?limit=1", 6);
    expect(tally).toMatchObject({ "2xx": 2, limited: 2, banned: 2 });
    const before = Date.now();
    for (let i = 0; i < 2; i++) {
      const { status, body } = await me(key, i);
      tally["2xx"]++;
      expect(status).toBe(200);
      expect(body).toMatchObject({ plan: "enterprise", limits: { perMinute: 2, perDay: 1000 }, used: { minute: 2, day: 2 }, remaining: { minute: 0, day: 998 }, banned: true });
      // Banned 60 s (BAN_SECONDS here) from the third refusal, a moment ago.
      const endsAt = Date.parse(body.bannedUntil as string);
      expect(endsAt).toBeGreaterThan(before);
      expect(endsAt).toBeLessThanOrEqual(before + 61_000);
    }
    // Still banned for everything else.
    expect(await requests(key, "/v1/pets?limit=1", 1)).toMatchObject({ banned: 1 });
    tally.banned++;
    await until("the history has every request", async () => JSON.stringify(historyTotals(await history(key))) === JSON.stringify(tally));
    const usage = await recorders[1]!.fetch(`${gateways[1]!.url}/v1/me/usage`, { headers: { Authorization: `Bearer ${key}` } });
    expect(usage.status).toBe(200);
    expect(historyTotals((await usage.json()) as { buckets: Tally[] })).toEqual(tally);
  });

  it("GET /v1/me costs the key nothing: five calls leave used as it was and never ban", { timeout: 30_000 }, async () => {
    const key = await keys.issue({ plan: "enterprise", perMinute: 2, perDay: 1000 });
    await requests(key, "/v1/pets?limit=1", 2);
    for (let i = 0; i < 5; i++) {
      const { status, body } = await me(key, i);
      expect(status).toBe(200);
      expect(body).toMatchObject({ used: { minute: 2, day: 2 }, remaining: { minute: 0, day: 998 }, banned: false, bannedUntil: null });
    }
    // Three refusals ban (BAN_AFTER here): the five looks added no strike, so the next request is only limited.
    expect(await requests(key, "/v1/pets?limit=1", 1)).toMatchObject({ limited: 1, banned: 0 });
    expect((await me(key)).body).toMatchObject({ used: { minute: 2, day: 2 }, banned: false });
  });

  it("a request costs one Redis round trip with reporting on; /v1/me one read-only script (MONITOR)", async () => {
    const key = await keys.issue({ plan: "business" });
    await requests(key, "/v1/pets?limit=1", 1);
    await requests(key, "/v1/me", 2); // both scripts known to Redis: no NOSCRIPT retry below
    const admin = new Redis(redis.port, "127.0.0.1");
    try {
      const id = keyIdOf(key);
      const scripts: string[] = [];
      const commands = await clientCommands(
        admin,
        async () => {
          await requests(key, "/v1/pets?limit=1", 6);
          await requests(key, "/v1/me", 2);
          // Past a report of every gateway.
          await new Promise((r) => setTimeout(r, 1_500));
        },
        (args) => {
          const mine = args.some((arg) => arg.includes(`{key:${id}}`));
          if (mine) scripts.push(args[1]!);
          return mine;
        },
      );
      expect(commands).toEqual(Array(8).fill("evalsha"));
      const sha1 = (lua: string) => createHash("sha1").update(lua).digest("hex");
      expect(scripts).toEqual([...Array(6).fill(sha1(LIMITER_LUA)), ...Array(2).fill(sha1(PEEK_LUA))]);
    } finally {
      admin.disconnect();
    }
  });
});
