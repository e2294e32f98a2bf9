import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedis, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { createTestKeys, memoryLimiter, redisLimiter, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { fakeClock } from "../../../testkit/fake-clock.ts";
import { until } from "../../../testkit/until.ts";

// Plans, quotas, bans and headers as a client sees them through the gateway, with real Redis.
let pets: RunningPetService;
let keys: TestKeys;
let redis: PrivateRedis;
const gateways: RunningGateway[] = [];

beforeAll(async () => {
  [pets, keys, redis] = await Promise.all([startPetService(), createTestKeys(), startRedis()]);
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
  await pets?.stop();
  await keys?.remove();
  await redis?.stop();
});

async function gateway(opts: Omit<Parameters<typeof startGateway>[0], "petServiceAddr" | "keys"> = {}) {
  const g = await startGateway({ petServiceAddr: pets.address, keys, ...opts });
  gateways.push(g);
  return g;
}

const get = (g: RunningGateway, key: string | null, path = "/v1/pets?limit=1", headers: Record<string, string> = {}) =>
  fetch(`${g.url}${path}`, { headers: key === null ? headers : { ...headers, Authorization: `Bearer ${key}` } });

async function codeOf(res: Response): Promise<string> {
  return ((await res.json()) as { code: string }).code;
}

function expectRateLimitHeaders(res: Response) {
  for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit"]) {
    expect(res.headers.get(name), `${name} on ${res.status}`).not.toBeNull();
  }
}

describe("per-minute and per-day windows (memory store, injected clock)", () => {
  it("admits exactly the minute limit, then 429 with an exact Retry-After", async () => {
    const clock = fakeClock(Date.UTC(2027, 0, 1, 12, 0, 0, 250));
    const g = await gateway({ clock: clock.clock, limiter: memoryLimiter({ ban: { after: 100, seconds: 900 }, clock: clock.clock }) });
    const key = await keys.issue({ plan: "enterprise", perMinute: 3, perDay: 5 });

    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(g, key);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-ratelimit-limit")).toBe("3");
      remaining.push(res.headers.get("x-ratelimit-remaining")!);
    }
    expect(remaining).toEqual(["2", "1", "0"]);

    const refused = await get(g, key);
    expect(refused.status).toBe(429);
    expect(await codeOf(refused)).toBe("rate_limited");
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(61);
    expect(refused.headers.get("ratelimit-policy")).toBe('"minute";q=3;w=60, "day";q=5;w=86400');

    // One second before Retry-After is still refused; at Retry-After the retry is admitted.
    clock.advance(retryAfter * 1000 - 1000);
    expect((await get(g, key)).status).toBe(429);
    clock.advance(1000);
    expect((await get(g, key)).status).toBe(200);
  });

  it("enforces the day window across minutes, and the day then binds the headers", async () => {
    const clock = fakeClock(Date.UTC(2027, 0, 1, 12, 0, 0));
    const g = await gateway({ clock: clock.clock, limiter: memoryLimiter({ ban: { after: 100, seconds: 900 }, clock: clock.clock }) });
    const key = await keys.issue({ plan: "enterprise", perMinute: 3, perDay: 5 });
    let admitted = 0;
    for (let minute = 0; minute < 4; minute++) {
      for (let i = 0; i < 3; i++) if ((await get(g, key)).status === 200) admitted++;
      clock.advance(61_000);
    }
    expect(admitted).toBe(5);
    const refused = await get(g, key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("5");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3600);
  });

  it("puts the headers on every status: 200, 201, 400, 401, 404, 405, 429", async () => {
    const clock = fakeClock();
    const g = await gateway({ clock: clock.clock, limiter: memoryLimiter({ ban: { after: 100, seconds: 900 }, clock: clock.clock }) });
    const key = await keys.issue({ plan: "enterprise", perMinute: 7, perDay: 100 });
    const post = (body: string) =>
      fetch(`${g.url}/v1/pets`, { method: "POST", body, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" } });
    const responses = [
      await get(g, key),
      await post('{"name":"Hdr","categoryId":1}'),
      await post("{oops"),
      await get(g, "forged.token.here"),
      await get(g, key, "/v1/pets/987654321"),
      await fetch(`${g.url}/v1/pets`, { method: "PATCH", headers: { Authorization: `Bearer ${key}` } }),
      await get(g, key),
      await get(g, key),
      await get(g, key),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 201, 400, 401, 404, 405, 200, 200, 429]);
    responses.forEach(expectRateLimitHeaders);
    expect(responses.at(-1)!.headers.get("retry-after")).not.toBeNull();
  });

  it("puts the headers on 503 when the pet service is down", async () => {
    const g = await startGateway({ petServiceAddr: "127.0.0.1:1", keys });
    gateways.push(g);
    const res = await get(g, await keys.issue());
    expect(res.status).toBe(503);
    expectRateLimitHeaders(res);
  });
});

describe("bans", () => {
  it("bans a key that keeps sending while refused: 429 api_key_banned, Retry-After = time left", async () => {
    const clock = fakeClock();
    const g = await gateway({ clock: clock.clock, limiter: memoryLimiter({ ban: { after: 3, seconds: 120 }, clock: clock.clock }) });
    const key = await keys.issue({ plan: "enterprise", perMinute: 2, perDay: 100 });
    expect([(await get(g, key)).status, (await get(g, key)).status]).toEqual([200, 200]);
    // BAN_AFTER = 3: the third refused request within the retry period starts the ban.
    for (let i = 0; i < 2; i++) {
      const res = await get(g, key);
      expect(res.status).toBe(429);
      expect(await codeOf(res)).toBe("rate_limited");
    }
    const banned = await get(g, key);
    expect(banned.status).toBe(429);
    expect(await codeOf(banned)).toBe("api_key_banned");
    expect(Number(banned.headers.get("retry-after"))).toBe(120);

    clock.advance(100_000);
    const later = await get(g, key);
    expect(await codeOf(later)).toBe("api_key_banned");
    expect(Number(later.headers.get("retry-after"))).toBe(20);

    clock.advance(20_000);
    expect((await get(g, key)).status).toBe(200);
  });
});

describe("without a valid key", () => {
  it("limits per client address, so key guessing is slowed; the same headers apply", async () => {
    const clock = fakeClock();
    const g = await gateway({
      clock: clock.clock,
      limiter: memoryLimiter({ ban: { after: 100, seconds: 900 }, clock: clock.clock }),
      overrides: { anonymousWindows: [{ windowSeconds: 60, limit: 3 }, { windowSeconds: 86_400, limit: 100 }] },
    });
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const res = await get(g, "guess-" + i);
      expectRateLimitHeaders(res);
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    // A valid key is counted against its own quota, not the address's.
    expect((await get(g, await keys.issue())).status).toBe(200);
  });

  it("takes the client address from X-Forwarded-For only when proxies are trusted", async () => {
    const windows = [{ windowSeconds: 60, limit: 1 }, { windowSeconds: 86_400, limit: 100 }];
    const untrusted = await gateway({ overrides: { anonymousWindows: windows, trustProxy: false } });
    const trusted = await gateway({ overrides: { anonymousWindows: windows, trustProxy: "loopback" } });
    const from = (g: RunningGateway, ip: string) => get(g, null, "/v1/pets", { "X-Forwarded-For": ip });
    expect([(await from(untrusted, "203.0.113.1")).status, (await from(untrusted, "203.0.113.2")).status]).toEqual([401, 429]);
    expect([(await from(trusted, "203.0.113.1")).status, (await from(trusted, "203.0.113.2")).status]).toEqual([401, 401]);
    expect((await from(trusted, "203.0.113.1")).status).toBe(429);
  });
});

describe("GET /v1/me and /v1/me/usage", () => {
  it("answer a banned key, counted against the client address's anonymous quota (429 rate_limited past it), not the key's", async () => {
    const clock = fakeClock();
    const g = await gateway({
      clock: clock.clock,
      limiter: memoryLimiter({ ban: { after: 2, seconds: 300 }, clock: clock.clock }),
      overrides: { anonymousWindows: [{ windowSeconds: 60, limit: 4 }, { windowSeconds: 86_400, limit: 100 }] },
    });
    const key = await keys.issue({ plan: "enterprise", perMinute: 1, perDay: 100 });
    expect((await get(g, key)).status).toBe(200);
    expect(await codeOf(await get(g, key))).toBe("rate_limited");
    expect(await codeOf(await get(g, key))).toBe("api_key_banned");

    const me = await get(g, key, "/v1/me");
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ used: { minute: 1, day: 1 }, remaining: { minute: 0, day: 99 }, banned: true, bannedUntil: new Date(clock.clock() + 300_000).toISOString() });
    // The headers are the address's quota, which the request counted against.
    expect(me.headers.get("x-ratelimit-limit")).toBe("4");
    expect(me.headers.get("x-ratelimit-remaining")).toBe("3");
    expect((await get(g, key, "/v1/me/usage")).status).toBe(200);
    expect((await get(g, "not-a-key", "/v1/me")).status).toBe(401);
    expect((await get(g, key, "/v1/me")).status).toBe(200);
    const refused = await get(g, key, "/v1/me");
    expect(refused.status).toBe(429);
    expect(await codeOf(refused)).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // The key's own standing is untouched by all that: still banned, its ban not lengthened.
    const banned = await get(g, key);
    expect(await codeOf(banned)).toBe("api_key_banned");
    expect(Number(banned.headers.get("retry-after"))).toBe(300);
  });
});

describe("shared Redis", () => {

  it("two gateways with clocks two hours apart admit exactly the limit under 100 concurrent requests", async () => {
    const ahead = fakeClock(Date.now() + 3_600_000);
    const behind = fakeClock(Date.now() - 3_600_000);
    const [a, b] = [
      await gateway({ clock: ahead.clock, limiter: redisLimiter({ redisUrl: redis.url }) }),
      await gateway({ clock: behind.clock, limiter: redisLimiter({ redisUrl: redis.url }) }),
    ];
    const key = await keys.issue({ plan: "enterprise", perMinute: 37, perDay: 1000 });
    const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => get(i % 2 ? a : b, key)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(37);
    expect(statuses.filter((s) => s === 429)).toHaveLength(63);
    // Both replicas report from the same counters.
    const remaining = await Promise.all([get(a, key), get(b, key)]);
    expect(remaining.map((r) => r.headers.get("x-ratelimit-remaining"))).toEqual(["0", "0"]);
  });

  it("bans on every replica", async () => {
    const limiter = redisLimiter({ redisUrl: redis.url, ban: { after: 2, seconds: 300 } });
    const [a, b] = [await gateway({ limiter }), await gateway({ limiter })];
    const key = await keys.issue({ plan: "enterprise", perMinute: 1, perDay: 100 });
    expect((await get(a, key)).status).toBe(200);
    expect((await get(b, key)).status).toBe(429);
    expect((await get(a, key)).status).toBe(429);
    const banned = await get(b, key);
    expect(await codeOf(banned)).toBe("api_key_banned");
    expect(Number(banned.headers.get("retry-after"))).toBeGreaterThan(295);
    expect(await codeOf(await get(a, key))).toBe("api_key_banned");
  });

  it("keeps serving with no 5xx and keeps limiting while Redis is down, then goes back to Redis", async () => {
    const g = await gateway({ limiter: redisLimiter({ redisUrl: redis.url }) });
    const key = await keys.issue({ plan: "enterprise", perMinute: 5, perDay: 1000 });
    expect((await get(g, key)).status).toBe(200);

    await redis.kill();
    try {
      const during: number[] = [];
      for (let i = 0; i < 8; i++) during.push((await get(g, key)).status);
      expect(during.every((s) => s < 500)).toBe(true);
      // Limited from memory: a fresh in-process window, still at most 5 admitted.
      expect(during.filter((s) => s === 200).length).toBeLessThanOrEqual(5);
      expect(during).toContain(429);
      const metrics = await (await fetch(`${g.url}/metrics`)).text();
      expect(metrics).toMatch(/gateway_redis_faults_total [1-9]/);
      expect(metrics).toMatch(/gateway_limiter_fallback_active 1/);
    } finally {
      await redis.start();
    }
    const other = await keys.issue({ plan: "enterprise", perMinute: 5, perDay: 1000 });
    let usedRedis = false;
    for (let i = 0; i < 50 && !usedRedis; i++) {
      await get(g, other);
      usedRedis = (await redisKeysFor(other)) > 0;
      if (!usedRedis) await new Promise((r) => setTimeout(r, 100));
    }
    expect(usedRedis).toBe(true);
  });

  async function redisKeysFor(token: string): Promise<number> {
    const { Redis } = await import("ioredis");
    const client = new Redis(redis.url, { maxRetriesPerRequest: 0 });
    try {
      const sub = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).sub as string;
      return (await client.keys(`rl:{key:${sub}}:*`)).length;
    } finally {
      client.disconnect();
    }
  }
});

describe("revocation", () => {
  it.each(["memory", "redis"] as const)("a key revoked through the key service is refused within 1 s, 401 with the invalid_token challenge (%s limiter)", async (mode) => {
    const g = await gateway(mode === "redis" ? { limiter: redisLimiter({ redisUrl: redis.url }) } : {});
    const key = await keys.issue();
    expect((await get(g, key)).status).toBe(200);
    await keys.revoke(key);
    const start = Date.now();
    await until("the gateway refuses the revoked key", async () => (await get(g, key)).status === 401, 5000, 10);
    expect(Date.now() - start).toBeLessThan(1000);
    const res = await get(g, key);
    // RFC 6750 §3: every 401 names the scheme.
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
    expect(await codeOf(res)).toBe("unauthorized");
  });
});
