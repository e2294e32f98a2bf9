import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KeyRecord } from "../../../lib/key-record.ts";
import { redisKey, subjectForKey, KEY_RECORD_TTL_SECONDS } from "../../../lib/redis-keys.ts";
import { publishKeyRecord, REVOKED_AFTER_EXPIRY_MS, withRedis } from "../../../keys/redis.ts";
import { syncKeys } from "../../../keys/sync.ts";
import { createKeyOperations } from "../../../keys/operations/index.ts";
import { freePort } from "../../../testkit/net.ts";
import { startRedis, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { useKeyRegistry, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);

let redis: PrivateRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const NOW = Date.now();
const record = (overrides: Partial<KeyRecord> = {}): KeyRecord => ({
  id: `key_${Math.random().toString(16).slice(2, 18).padEnd(16, "0")}`,
  name: "n",
  ownerId: null,
  metadata: {},
  plan: "enterprise",
  limits: { perMinute: 7, perDay: 70 },
  scopes: ["pets:read"],
  allowedCidrs: ["10.0.0.0/8", "2001:db8::/32"],
  createdAt: NOW,
  expiresAt: null,
  revokedAt: null,
  generation: 2,
  graceUntil: { "1": NOW + 60_000 },
  kid: "kid",
  lastUsedAt: null,
  ...overrides,
});
const rec = (id: string) => redisKey(subjectForKey(id), "rec");
const revoked = (id: string) => redisKey(subjectForKey(id), "revoked");

describe("publishKeyRecord", () => {
  it("writes every field the limiter reads, keeps the gateways' last use, and sets the record's TTL", async () => {
    const r = record();
    await client.hset(rec(r.id), "lu", "123");
    await publishKeyRecord(client, r);
    expect(await client.hgetall(rec(r.id))).toEqual({
      p: "enterprise",
      m: "7",
      d: "70",
      g: "2",
      r1: String(NOW + 60_000),
      s: "pets:read",
      c: "10.0.0.0/8 2001:db8::/32",
      x: "",
      lu: "123",
    });
    expect(await client.ttl(rec(r.id))).toBeGreaterThan(KEY_RECORD_TTL_SECONDS - 10);
    expect(await client.exists(revoked(r.id))).toBe(0);
  });

  it("a revoked key: the revocation entry until a day after expiry, or for ever; publishing again changes nothing", async () => {
    const expiring = record({ revokedAt: NOW, expiresAt: NOW + 3_600_000, allowedCidrs: [], scopes: ["pets:read", "pets:write"] });
    await publishKeyRecord(client, expiring);
    await publishKeyRecord(client, expiring);
    expect(await client.get(revoked(expiring.id))).toBe("1");
    const ttl = await client.pttl(revoked(expiring.id));
    expect(ttl).toBeGreaterThan(3_600_000 + REVOKED_AFTER_EXPIRY_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000 + REVOKED_AFTER_EXPIRY_MS);
    expect(await client.hmget(rec(expiring.id), "s", "c", "x")).toEqual(["pets:read pets:write", "", String(NOW + 3_600_000)]);
    const forever = record({ revokedAt: NOW });
    await publishKeyRecord(client, forever);
    expect([await client.get(revoked(forever.id)), await client.ttl(revoked(forever.id))]).toEqual(["1", -1]);
  });
});

describe("syncKeys", () => {
  it("publishes every key of the registry", async () => {
    const ops = createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: Date.now });
    const a = await ops.create({ plan: "pro" }, "cli");
    const b = await ops.create({ plan: "free", scopes: ["pets:write"] }, "cli");
    await ops.revoke(b.record.id, "cli");
    expect(await syncKeys(registry(), { redisUrl: redis.url, now: Date.now() })).toEqual({ keys: 2, revoked: 1 });
    expect(await client.hget(rec(a.record.id), "p")).toBe("pro");
    expect(await client.hget(rec(b.record.id), "s")).toBe("pets:write");
    expect(await client.get(revoked(b.record.id))).toBe("1");
  });

  it("an unreachable Redis is a clear error saying nothing is lost", async () => {
    await expect(syncKeys(registry(), { redisUrl: `redis://127.0.0.1:${await freePort()}`, now: Date.now() })).rejects.toThrowError(/nothing is lost/);
    await expect(withRedis(`redis://127.0.0.1:${await freePort()}`, async () => 1)).rejects.toThrow();
  });
});
