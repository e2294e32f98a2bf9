/**
 * With REDIS_URL the key service keeps every key's Redis record current (what the gateways'
 * limiter reads on each request), the JWKS beside them and the last published seq, whoever wrote
 * the change: the admin API or another registry handle (the command line).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JWKS_REDIS_KEY } from "../../../../lib/jwks.ts";
import { createKeyOperations } from "../../../../keys/operations/index.ts";
import { SEQ_REDIS_KEY } from "../../../../keys/feed/redis-publisher.ts";
import { openRegistry } from "../../../../keys/registry/open.ts";
import { adminRequest, startKeyService, type RunningKeyService } from "../../../../testkit/key-service.ts";
import { startRedis, withRedisClient, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import { until } from "../../../../testkit/until.ts";

let redis: PrivateRedis;
let keys: RunningKeyService;
// The registry and signing pairs outlive one key service: the restart test starts another on them.
const dir = mkdtempSync(path.join(tmpdir(), "petstore-keys-redis-"));
const state = { db: path.join(dir, "keys.sqlite"), keysDir: path.join(dir, "keys") };

beforeAll(async () => {
  redis = await startRedis();
  keys = await startKeyService({ ...state, redisUrl: redis.url });
});

afterAll(async () => {
  await keys?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const call = (method: string, path: string, body?: unknown) => adminRequest(keys.url, method, path, { token: keys.adminToken, body });
const rec = (id: string) => withRedisClient(redis.port, (c) => c.hgetall(`rl:{key:${id}}:rec`));
const revokedFlag = (id: string) => withRedisClient(redis.port, (c) => c.get(`rl:{key:${id}}:revoked`));

describe("publishing to Redis", () => {
  it("publishes a created key's record, then an update (plan, scopes, networks), then its revocation", async () => {
    const created = await call("POST", "/v1/keys", { name: "Published", plan: "free" });
    const id = created.body.id as string;
    await until("the created key's record is in Redis", async () => (await rec(id)).p === "free", 5_000);
    expect(await rec(id)).toMatchObject({ p: "free", m: "60", d: "1000", g: "0", s: "pets:read pets:write", c: "", x: "" });

    await call("PATCH", `/v1/keys/${id}`, { plan: "business", scopes: ["pets:read"], allowedCidrs: ["203.0.113.0/24"] });
    await until("the update is in Redis", async () => (await rec(id)).p === "business", 5_000);
    expect(await rec(id)).toMatchObject({ p: "business", m: "1000", d: "100000", s: "pets:read", c: "203.0.113.0/24" });

    await call("POST", `/v1/keys/${id}/revoke`);
    await until("the revocation is in Redis", async () => (await revokedFlag(id)) === "1", 5_000);
  });

  it("publishes a change another process made in the registry (the command line), and keeps the JWKS and the seq", async () => {
    const cli = await openRegistry(keys.db);
    try {
      const operations = createKeyOperations({ registry: cli, keysDir: keys.keysDir, clock: Date.now });
      const created = await operations.create({ name: "By the CLI", plan: "pro" }, "cli");
      await operations.revoke(created.record.id, "cli");
      await until("the CLI's revocation is in Redis", async () => (await revokedFlag(created.record.id)) === "1", 5_000);
      const last = await cli.lastSeq();
      await until("the published seq reaches the last event", async () => Number(await withRedisClient(redis.port, (c) => c.get(SEQ_REDIS_KEY))) === last, 5_000);
    } finally {
      await cli.close();
    }
    const jwks = JSON.parse((await withRedisClient(redis.port, (c) => c.get(JWKS_REDIS_KEY)))!);
    expect(jwks).toEqual((await call("GET", "/.well-known/jwks.json")).body);
  });

  it("publishes every record again after a restart when Redis lost them", async () => {
    const created = await call("POST", "/v1/keys", { name: "Survivor", plan: "pro" });
    await until("published", async () => (await rec(created.body.id)).p === "pro", 5_000);
    await keys.stop();
    // Redis lost its data: a restarted key service puts every record back.
    await withRedisClient(redis.port, (c) => c.flushall());
    keys = await startKeyService({ ...state, redisUrl: redis.url });
    await until("the record is back after the restart", async () => (await rec(created.body.id)).p === "pro", 5_000);
  });
});
