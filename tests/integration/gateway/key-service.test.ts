/**
 * Gateways as the key service's data planes (issue 39, point 4), with a real key service, real
 * gateways and real HTTP between them: revocations reach every gateway within 1 s with and
 * without Redis; an outage of the key service keeps the last state; a gateway that never loaded
 * it answers 503, never 401, and serves as soon as the key service answers; scopes and allowed
 * networks are refused with 403 end to end; a request still costs one Redis round trip.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestKeys, keyIdOf, redisLimiter, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { clientCommands, startRedis, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { startTcpProxy, type TcpProxy } from "../../../testkit/tcp-proxy.ts";
import { until } from "../../../testkit/until.ts";
import { spawnGateway } from "../../../testkit/gateway-process.ts";
import { freePort } from "../../../testkit/net.ts";

let pets: RunningPetService;
let redis: PrivateRedis;

beforeAll(async () => {
  [pets, redis] = await Promise.all([startPetService(), startRedis()]);
});
afterAll(async () => {
  await Promise.all([pets?.stop(), redis?.stop()]);
});

const get = (g: RunningGateway, key: string, headers: Record<string, string> = {}) =>
  fetch(`${g.url}/v1/pets?limit=1`, { headers: { ...headers, Authorization: `Bearer ${key}` } });
const post = (g: RunningGateway, key: string) =>
  fetch(`${g.url}/v1/pets`, {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name: "Scoped", categoryId: 1 }),
  });
const bodyOf = async (res: Response) => (await res.json()) as { code: string; message: string; status: number };

/** Milliseconds from now until `g` answers `key` with 401 (polled back to back). */
async function refusedAfter(g: RunningGateway, key: string, start: number): Promise<number> {
  await until("the gateway refuses the key", async () => (await get(g, key)).status === 401, 5_000, 5);
  return Date.now() - start;
}

describe.each([
  ["without Redis (the change feed)", false],
  ["with Redis (the key's Redis record and the feed)", true],
] as const)("two gateways %s", (_name, withRedis) => {
  let keys: TestKeys;
  let gateways: RunningGateway[];

  beforeAll(async () => {
    keys = await createTestKeys(withRedis ? { redisUrl: redis.url } : {});
    gateways = await Promise.all(
      [1, 2].map(() => startGateway({ petServiceAddr: pets.address, keys, ...(withRedis && { limiter: redisLimiter({ redisUrl: redis.url }) }) })),
    );
  });
  afterAll(async () => {
    await Promise.all(gateways?.map((g) => g.close()) ?? []);
    await keys?.remove();
  });

  it("a revocation through the admin API is refused by both gateways within 1 s, five times over", async () => {
    for (let i = 0; i < 5; i++) {
      const key = await keys.issue({ plan: "enterprise", perMinute: 10_000, perDay: 100_000 });
      for (const g of gateways) expect((await get(g, key)).status).toBe(200);
      await keys.revoke(key);
      const start = Date.now();
      const delays = await Promise.all(gateways.map((g) => refusedAfter(g, key, start)));
      expect(Math.max(...delays)).toBeLessThan(1_000);
      const res = await get(gateways[0]!, key);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
      expect(await bodyOf(res)).toMatchObject({ code: "unauthorized", status: 401 });
    }
  });

  it("a plan change and a roll reach both gateways from the key's next request, counts carried over", async () => {
    const key = await keys.issue({ plan: "free" });
    for (const g of gateways) expect((await get(g, key)).headers.get("x-ratelimit-limit")).toBe("60");
    await keys.update(key, { plan: "enterprise", perMinute: 5, perDay: 50 });
    for (const g of gateways) {
      await until("the new plan holds", async () => (await get(g, key)).headers.get("ratelimit-policy") === '"minute";q=5;w=60, "day";q=50;w=86400', 2_000, 10);
    }
    const rolled = await keys.roll(key, 0);
    for (const g of gateways) {
      await refusedAfter(g, key, Date.now());
      const res = await get(g, rolled);
      expect([res.status, res.headers.get("x-ratelimit-limit")]).toEqual([expect.any(Number), "5"]);
    }
  });
});

describe("through an outage of the key service", () => {
  let keys: TestKeys;
  let proxy: TcpProxy;
  /** The key service as gateways reach it: through a relay a test cuts and restores. */
  let viaProxy: { gatewayEnv: Record<string, string> };
  let cut = false;
  const cutKeyService = async () => {
    await proxy.cut();
    cut = true;
  };
  const restoreKeyService = async () => {
    if (cut) await proxy.restore();
    cut = false;
  };

  beforeAll(async () => {
    keys = await createTestKeys();
    const { port } = new URL(keys.gatewayEnv.KEYS_URL!);
    proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(port) });
    viaProxy = { gatewayEnv: { ...keys.gatewayEnv, KEYS_URL: `http://127.0.0.1:${proxy.port}` } };
  });
  afterAll(async () => {
    await proxy?.close();
    await keys?.remove();
  });

  it("the key service stopped: a loaded gateway keeps its last state, valid keys served, revoked keys refused", async () => {
    const own = await createTestKeys();
    const g = await startGateway({ petServiceAddr: pets.address, keys: own });
    try {
      const [valid, revoked] = [await own.issue(), await own.issue()];
      await own.revoke(revoked);
      await refusedAfter(g, revoked, Date.now());
      expect((await get(g, valid)).status).toBe(200);
      const following = async () => /^gateway_key_service_following (\d)$/m.exec(await (await fetch(`${g.url}/metrics`)).text())?.[1];
      expect(await following()).toBe("1");
      await own.service.stop();
      await new Promise((r) => setTimeout(r, 3_000)); // several failed long polls and retries
      expect((await get(g, valid)).status).toBe(200);
      expect((await get(g, revoked)).status).toBe(401);
      expect((await fetch(`${g.url}/readyz`)).status).toBe(200);
      // Ready, but operators see that changes are not reaching it.
      expect(await following()).toBe("0");
    } finally {
      await g.close();
      await own.remove();
    }
  });

  it("a gateway started while the key service is unreachable answers 503 (never 401 for a valid key) and serves within ~1 s of it answering", async () => {
    const valid = await keys.issue();
    await cutKeyService();
    const g = await startGateway({ petServiceAddr: pets.address, keys: viaProxy, cold: true });
    try {
      const cold = await get(g, valid);
      expect(cold.status).toBe(503);
      expect(cold.headers.get("retry-after")).toBe("1");
      expect(await bodyOf(cold)).toMatchObject({ code: "service_unavailable", status: 503 });
      const ready = await fetch(`${g.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reasons: string[] }).reasons.join()).toMatch(/key state not loaded from the key service/);
      await new Promise((r) => setTimeout(r, 2_000)); // the retry backoff at its longest
      await restoreKeyService();
      const answering = Date.now();
      await until("the gateway serves the key", async () => (await get(g, valid)).status === 200, 5_000, 10);
      expect(Date.now() - answering).toBeLessThan(1_500);
    } finally {
      await restoreKeyService();
      await g.close();
    }
  });

  it("a gateway whose KEYS_SERVICE_TOKEN the key service refuses stays not ready and answers 503", async () => {
    const g = await startGateway({ petServiceAddr: pets.address, keys: { gatewayEnv: { ...keys.gatewayEnv, KEYS_SERVICE_TOKEN: "pskadm_wrong" } }, cold: true });
    try {
      await new Promise((r) => setTimeout(r, 500));
      expect((await get(g, await keys.issue())).status).toBe(503);
      const ready = await fetch(`${g.url}/readyz`);
      expect(((await ready.json()) as { reasons: string[] }).reasons.join()).toMatch(/refused KEYS_SERVICE_TOKEN/);
    } finally {
      await g.close();
    }
  });
});

describe("the gateway process without its key service", () => {
  it("logs one line naming what is missing, answers /v1 with 503 and Retry-After: 1, and /readyz says why", async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const g = await spawnGateway({ PET_SERVICE_ADDR: pets.address, KEYS_URL: nobody, LOG_LEVEL: "info" }, { cold: true });
    try {
      const res = await fetch(`${g.url}/v1/pets`, { headers: { Authorization: "Bearer a.b.c" } });
      expect([res.status, res.headers.get("retry-after")]).toEqual([503, "1"]);
      const ready = await fetch(`${g.url}/readyz`);
      expect(((await ready.json()) as { reasons: string[] }).reasons.join()).toMatch(/key state not loaded from the key service at http:\/\/127\.0\.0\.1:\d+ \(key service unreachable/);
      await until("the gateway logged the unreachable key service", () => /key service unreachable/.test(g.output()));
      const lines = g.output().split("\n");
      expect(lines.filter((l) => l.includes("KEYS_SERVICE_TOKEN is not set"))).toHaveLength(1);
      expect(lines.filter((l) => l.includes("key service unreachable"))).toHaveLength(1);
    } finally {
      g.child.kill("SIGTERM");
      await g.exited;
    }
  });
});

describe("scopes and allowed networks, end to end", () => {
  let keys: TestKeys;
  let g: RunningGateway;
  let proxied: RunningGateway;

  beforeAll(async () => {
    keys = await createTestKeys({ redisUrl: redis.url });
    g = await startGateway({ petServiceAddr: pets.address, keys, limiter: redisLimiter({ redisUrl: redis.url }) });
    // Behind a proxy: the client address is the one X-Forwarded-For names (TRUST_PROXY).
    proxied = await startGateway({ petServiceAddr: pets.address, keys, overrides: { trustProxy: "loopback" } });
  });
  afterAll(async () => {
    await Promise.all([g?.close(), proxied?.close()]);
    await keys?.remove();
  });

  it("a read-only key lists pets and gets 403 insufficient_scope creating one; counted like any request", async () => {
    const key = await keys.issue({ plan: "enterprise", perMinute: 10, perDay: 100, scopes: ["pets:read"] });
    expect((await get(g, key)).status).toBe(200);
    const res = await post(g, key);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="insufficient_scope", scope="pets:write"');
    expect(await bodyOf(res)).toMatchObject({ code: "forbidden", status: 403, message: expect.stringContaining("pets:write") });
    expect(res.headers.get("x-ratelimit-remaining")).toBe("8");

    await keys.update(key, { scopes: ["pets:read", "pets:write"] });
    await until("the new scopes hold", async () => (await post(g, key)).status === 201, 2_000, 10);
  });

  it("a write-only key gets 403 insufficient_scope naming pets:read on GET", async () => {
    const key = await keys.issue({ scopes: ["pets:write"] });
    const res = await get(g, key);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe('Bearer error="insufficient_scope", scope="pets:read"');
    expect((await post(g, key)).status).toBe(201);
  });

  it("a key limited to other networks gets 403 forbidden (no scope challenge); loopback and the proxy's client address are honoured", async () => {
    const elsewhere = await keys.issue({ allowedCidrs: ["10.0.0.0/8", "2001:db8::/32"] });
    const res = await get(g, elsewhere);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBeNull();
    expect(await bodyOf(res)).toMatchObject({ code: "forbidden", message: expect.stringMatching(/address/) });

    const local = await keys.issue({ allowedCidrs: ["127.0.0.0/8", "::1/128"] });
    expect((await get(g, local)).status).toBe(200);

    expect((await get(proxied, elsewhere, { "X-Forwarded-For": "10.9.8.7" })).status).toBe(200);
    expect((await get(proxied, elsewhere, { "X-Forwarded-For": "192.0.2.1" })).status).toBe(403);
    expect((await get(proxied, local, { "X-Forwarded-For": "192.0.2.1" })).status).toBe(403);
  });

  it("a request of a key with scopes and networks still costs one Redis round trip (MONITOR)", async () => {
    const key = await keys.issue({ scopes: ["pets:read"], allowedCidrs: ["127.0.0.0/8", "::1/128"] });
    expect((await get(g, key)).status).toBe(200);
    const admin = new Redis(redis.port, "127.0.0.1");
    try {
      const id = keyIdOf(key);
      const commands = await clientCommands(admin, async () => {
        for (let i = 0; i < 5; i++) expect((await get(g, key)).status).toBe(200);
        expect((await post(g, key)).status).toBe(403);
      }, (args) => args.some((arg) => arg.includes(`{key:${id}}`)));
      expect(commands).toEqual(Array(6).fill("evalsha"));
    } finally {
      admin.disconnect();
    }
  });
});
