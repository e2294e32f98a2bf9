/**
 * Keys as a product, end to end: the real keys CLI (a process) changes keys that two real
 * gateways are serving, over a real Redis (one node, then a Cluster), and without Redis.
 *
 * Gateway A shares the operator's KEYS_DIR; gateway B has only the public keys (as a replica on
 * another machine would): what B applies at once it can only have learnt from Redis.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyChangesFilePath } from "../../../lib/key-changes.ts";
import { redisKey, subjectForKey } from "../../../lib/redis-keys.ts";
import { createTestKeys, redisLimiter, startGateway, useGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { runKeysCli, tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedisCluster } from "../../../testkit/redis-cluster.ts";
import { clientCommands, startRedis } from "../../../testkit/redis-server.ts";
import { until } from "../../../testkit/until.ts";

const TOKEN_LINE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/;
// Each test runs the CLI as a process several times: the timeout is a hang guard, not a speed bound.
const TIMEOUT_MS = 120_000;

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
const keyIdOf = (token: string) => String(tokenPayload(token).sub);
const minuteLimit = (res: Response) => /"minute";q=(\d+)/.exec(res.headers.get("ratelimit-policy") ?? "")?.[1];

describe.each([
  ["one Redis node", singleRedis],
  ["a Redis Cluster", clusterRedis],
] as const)("with %s and two gateways", (_name, startTestRedis) => {
  let redis: TestRedis;
  let pets: RunningPetService;
  let keys: TestKeys;
  let publicOnly: string;
  let a: RunningGateway;
  let b: RunningGateway;

  beforeAll(async () => {
    [redis, pets, keys] = await Promise.all([startTestRedis(), startPetService(), createTestKeys()]);
    publicOnly = mkdtempSync(path.join(os.tmpdir(), "petstore-public-keys-"));
    cpSync(path.join(keys.dir, "public"), path.join(publicOnly, "public"), { recursive: true });
    // A slow heartbeat: MONITOR then sees only the requests' commands.
    const limiter = redisLimiter({ redisUrl: redis.url, ban: { after: 3, seconds: 60 }, presence: { intervalMs: 60_000 } });
    a = await startGateway({ petServiceAddr: pets.address, keysDir: keys.dir, limiter });
    b = await startGateway({ petServiceAddr: pets.address, keysDir: publicOnly, limiter });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all([redis?.stop(), pets?.stop(), keys?.remove()]);
    rmSync(publicOnly, { recursive: true, force: true });
  });

  const cli = (...args: string[]) => runKeysCli(keys.dir, args, { REDIS_URL: redis.url });
  const ok = async (...args: string[]) => {
    const run = await cli(...args);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    return run.stdout;
  };

  it("set-plan: both replicas apply the new plan from the key's next request, counts carry over, one Redis command per request", { timeout: TIMEOUT_MS }, async () => {
    const token = keys.issue({ plan: "free" });
    const id = keyIdOf(token);
    for (const g of [a, b, a]) expect(minuteLimit(await get(g, token))).toBe("60");

    expect(await ok("set-plan", id, "--plan", "enterprise", "--per-minute", "5", "--per-day", "50")).toMatch(/now on plan enterprise \(5\/minute, 50\/day\)/);
    const onB = await get(b, token);
    expect(onB.status).toBe(200);
    expect(onB.headers.get("ratelimit-policy")).toBe('"minute";q=5;w=60, "day";q=50;w=86400');
    expect(onB.headers.get("x-ratelimit-remaining")).toBe("1"); // 3 before the change + this one
    expect((await get(a, token)).headers.get("x-ratelimit-remaining")).toBe("0");
    // Set below what it used: 429 until the window slides.
    expect((await get(b, token)).status).toBe(429);

    expect(await ok("set-plan", token, "--plan", "pro")).toMatch(/now on plan pro \(300\/minute, 10000\/day\)/);
    const pro = await get(b, token);
    expect([pro.status, minuteLimit(pro), pro.headers.get("x-ratelimit-remaining")]).toEqual([200, "300", "294"]);
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

  it("bad input exits non-zero with one line and changes nothing, in KEYS_DIR or Redis", { timeout: TIMEOUT_MS }, async () => {
    const token = keys.issue({ plan: "free" });
    const id = keyIdOf(token);
    const revoked = keyIdOf(keys.issue({ plan: "pro" }));
    await ok("set-plan", id, "--plan", "business");
    await ok("revoke", revoked);
    const snapshot = async () => [readFileSync(keyChangesFilePath(keys.dir), "utf8"), await redis.admin.hgetall(redisKey(subjectForKey(id), "rec"))];
    const before = await snapshot();
    const cases: [string[], number, RegExp][] = [
      [["set-plan", id, "--plan", "gold"], 2, /--plan must be one of free, pro, business, enterprise/],
      [["set-plan", id, "--plan", "enterprise", "--per-minute", "5"], 2, /enterprise keys need both --per-minute and --per-day/],
      [["set-plan", id, "--plan", "pro", "--per-minute", "5", "--per-day", "9"], 2, /for enterprise keys only/],
      [["set-plan", id], 2, /--plan must be one of/],
      [["set-plan", "key_0000000000000000", "--plan", "pro"], 1, /unknown key id "key_0000000000000000"/],
      [["set-plan", revoked, "--plan", "pro"], 1, /is revoked/],
      [["roll", "key_0000000000000000"], 1, /unknown key id/],
      [["roll", revoked], 1, /is revoked/],
      [["roll", id, "--grace", "5x"], 2, /--grace must be a positive whole number/],
      [["usage", "key_0000000000000000"], 1, /unknown key id/],
    ];
    for (const [args, code, message] of cases) {
      const run = await cli(...args);
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code, stdout: "" });
      expect(run.stderr).toMatch(message);
      expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
    expect(await snapshot()).toEqual(before);
    expect(minuteLimit(await get(b, token))).toBe("1000");
  });

  it("roll: a new key alone on stdout, same id, plan and counts; the old one works until the grace ends, then 401 on both", { timeout: TIMEOUT_MS }, async () => {
    const old = keys.issue({ plan: "enterprise", perMinute: 50, perDay: 500, name: "Acme" });
    const id = keyIdOf(old);
    for (const g of [a, b]) expect((await get(g, old)).status).toBe(200);

    const run = await cli("roll", id, "--grace", "3s");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(TOKEN_LINE);
    const rolled = run.stdout.trim();
    expect(tokenPayload(rolled)).toMatchObject({ sub: id, plan: "enterprise", lim: { m: 50, d: 50 * 10 }, gen: 1 });
    const graceEnds = Date.now() + 3_000;
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
    const listed = JSON.parse(await ok("list", "--json")) as { keyId: string; name: string; rolls: number; rolledAt: string | null }[];
    expect(listed.find((k) => k.keyId === id)).toMatchObject({ name: "Acme", rolls: 1, rolledAt: expect.stringMatching(/^20/) });
    expect(await ok("list")).toMatch(new RegExp(`${id} .* 1x, last 20`));
  });

  it("usage: plan and limits in force, used and remaining per window, ban and last use, from Redis", { timeout: TIMEOUT_MS }, async () => {
    const token = keys.issue({ plan: "enterprise", perMinute: 2, perDay: 20 });
    const id = keyIdOf(token);
    const fresh = JSON.parse(await ok("usage", id, "--json"));
    expect(fresh).toEqual({
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
    const used = JSON.parse(await ok("usage", token, "--json"));
    expect(used).toMatchObject({ used: { minute: 2, day: 2 }, remaining: { minute: 0, day: 18 }, banned: true });
    expect(Date.parse(used.bannedUntil) - Date.now()).toBeGreaterThan(30_000);
    expect(Math.abs(Date.parse(used.lastUsedAt) - Date.now())).toBeLessThan(60_000);
    expect(await ok("usage", id)).toMatch(/plan enterprise \(2\/minute, 20\/day\)\n {2}minute: 2 used, 0 remaining\n {2}day: {4}2 used, 18 remaining\n {2}banned: until 20/);
    expect(await ok("list")).toMatch(new RegExp(`${id} .* 20\\d\\d-\\d\\d-\\d\\dT[\\d:.]+Z\\n`));
  });

  it("sync: after Redis lost a key's record and revocation, publishes KEYS_DIR's again; meanwhile A follows KEYS_DIR", { timeout: TIMEOUT_MS }, async () => {
    const token = keys.issue({ plan: "free" });
    const revoked = keys.issue({ plan: "free" });
    await ok("set-plan", keyIdOf(token), "--plan", "business");
    await ok("revoke", keyIdOf(revoked));
    expect(minuteLimit(await get(b, token))).toBe("1000");
    expect((await get(b, revoked)).status).toBe(401);

    // Only this test's keys: what a Redis that lost its data no longer has.
    await redis.admin.del(redisKey(subjectForKey(keyIdOf(token)), "rec"));
    await redis.admin.del(redisKey(subjectForKey(keyIdOf(revoked)), "revoked"));
    expect(minuteLimit(await get(b, token))).toBe("60"); // B knows only the key's own claim
    expect((await get(b, revoked)).status).toBe(200);
    expect(minuteLimit(await get(a, token))).toBe("1000"); // A falls back to KEYS_DIR, never the stale plan
    // A learns the revocation from revoked.json at its next poll (every 100 ms here): the steps
    // above can all fall between two polls, some 20 ms after the revoke.
    await expect.poll(async () => (await get(a, revoked)).status, { timeout: 2_000, interval: 50 }).toBe(401);

    expect(await ok("sync")).toMatch(/^published \d+ revocation\(s\) and \d+ key change\(s\) to Redis\n$/);
    expect(minuteLimit(await get(b, token))).toBe("1000");
    expect((await get(b, revoked)).status).toBe(401);
  });
});

describe("without Redis: one gateway and KEYS_DIR", () => {
  // The limiter its configuration makes: in memory, publishing usage to KEYS_DIR.
  const ctx = useGateway();
  let keys: TestKeys;
  let g: RunningGateway;

  beforeAll(() => {
    keys = ctx.keys();
    g = ctx.gateway();
  });

  const ok = async (...args: string[]) => {
    const run = await runKeysCli(keys.dir, args);
    expect(run, run.stderr).toMatchObject({ code: 0 });
    return run.stdout;
  };

  it("set-plan and roll reach the gateway through KEYS_DIR within seconds; usage reads what it published", { timeout: TIMEOUT_MS }, async () => {
    const token = keys.issue({ plan: "free" });
    const id = keyIdOf(token);
    for (let i = 0; i < 3; i++) expect((await get(g, token)).status).toBe(200);

    await ok("set-plan", id, "--plan", "business");
    await until("the gateway applies the new plan", async () => minuteLimit(await get(g, token)) === "1000", 5_000);

    await until("usage shows what the gateway published", async () => JSON.parse(await ok("usage", id, "--json")).used.minute >= 4, 10_000);
    const usage = JSON.parse(await ok("usage", id, "--json"));
    expect(usage).toMatchObject({ plan: "business", limits: { perMinute: 1000, perDay: 100_000 }, banned: false });
    expect(usage.remaining.minute).toBe(1000 - usage.used.minute);
    expect(usage.lastUsedAt).not.toBeNull();

    const rolled = (await ok("roll", id, "--grace", "0s")).trim();
    await until("the old key is refused", async () => (await get(g, token)).status === 401, 5_000);
    expect((await get(g, rolled)).status).toBe(200);
    expect(minuteLimit(await get(g, rolled))).toBe("1000");

    const sync = await runKeysCli(keys.dir, ["sync"]);
    expect([sync.code, sync.stderr]).toEqual([2, "keys: sync publishes to Redis: set REDIS_URL (see: npm run keys -- help)\n"]);
  });
});
