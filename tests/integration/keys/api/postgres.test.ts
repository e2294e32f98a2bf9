/**
 * Key-service replicas on one PostgreSQL database serve each other's writes, long polls on one
 * are woken by a write on the other, and a database that goes away answers 503 with Retry-After
 * (never another 5xx) until it is back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateAdminToken } from "../../../../keys/admin-tokens/tokens.ts";
import { adminRequest, startKeyService, type RunningKeyService } from "../../../../testkit/key-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../../testkit/postgres.ts";
import { startTcpProxy, viaProxy, type TcpProxy } from "../../../../testkit/tcp-proxy.ts";
import { until } from "../../../../testkit/until.ts";

let db: TestDatabase;
let proxy: TcpProxy;
let a: RunningKeyService;
let b: RunningKeyService;
const adminToken = generateAdminToken();
// Replicas share the signing pairs (one KEYS_DIR, as a mounted secret would be).
const keysDir = path.join(mkdtempSync(path.join(tmpdir(), "petstore-keys-pg-")), "keys");

beforeAll(async () => {
  db = await createTestDatabase();
  const { hostname, port } = new URL(db.url);
  proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  // Both start at once: the bootstrap token is ensured once between them.
  [a, b] = await Promise.all([startKeyService({ db: db.url, keysDir, adminToken }), startKeyService({ db: viaProxy(db.url, proxy), keysDir, adminToken })]);
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await proxy?.close();
  await db?.drop();
  rmSync(path.dirname(keysDir), { recursive: true, force: true });
});

const on = (replica: RunningKeyService, method: string, p: string, body?: unknown, token: string = adminToken) => adminRequest(replica.url, method, p, { token, body });

describe("two replicas on one PostgreSQL database", () => {
  it("serve each other's writes: a key created on A is read, changed and revoked on B", async () => {
    const created = await on(a, "POST", "/v1/keys", { name: "Shared", plan: "pro" });
    expect(created.status).toBe(201);
    const read = await on(b, "GET", `/v1/keys/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body.name).toBe("Shared");
    expect((await on(b, "PATCH", `/v1/keys/${created.body.id}`, { name: "Shared, renamed" })).status).toBe(200);
    expect((await on(a, "GET", `/v1/keys/${created.body.id}`)).body.name).toBe("Shared, renamed");
    const tokens = await on(a, "GET", "/v1/admin-tokens");
    expect(tokens.body.items.map((t: { name: string }) => t.name)).toEqual(["bootstrap"]);
  });

  it("a long poll on B is answered within 1 s of a write on A", async () => {
    const head = (await on(b, "GET", "/v1/events?limit=1000")).body.items.at(-1).seq as number;
    const polled = on(b, "GET", `/v1/events?after=${head}&wait=20`);
    await new Promise((r) => setTimeout(r, 300));
    const written = Date.now();
    const created = await on(a, "POST", "/v1/keys", { name: "Wakes B", plan: "free" });
    const answer = await polled;
    expect(Date.now() - written).toBeLessThan(1_000);
    expect(answer.body.items.map((e: { keyId: string }) => e.keyId)).toEqual([created.body.id]);
  });

  it("an admin token revoked on A is refused by B from its next request", async () => {
    const made = await on(a, "POST", "/v1/admin-tokens", { name: "replica-test", scopes: ["keys:read"] });
    expect((await on(b, "GET", "/v1/keys", undefined, made.body.token)).status).toBe(200);
    await on(a, "POST", `/v1/admin-tokens/${made.body.id}/revoke`);
    expect((await on(b, "GET", "/v1/keys", undefined, made.body.token)).status).toBe(401);
  });
});

describe("the database down", () => {
  it("answers 503 service_unavailable with Retry-After (no other 5xx), /readyz 503, /healthz 200, and serves again when it is back", { timeout: 60_000 }, async () => {
    await proxy.cut();
    try {
      const answers = await Promise.all([
        on(b, "POST", "/v1/keys", { name: "During the outage", plan: "free" }),
        on(b, "GET", "/v1/keys"),
        on(b, "GET", "/v1/events?after=0"),
        on(b, "GET", "/v1/admin-tokens"),
      ]);
      for (const res of answers) {
        expect(res.status).toBe(503);
        expect(res.body.code).toBe("service_unavailable");
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(res.text).not.toMatch(/postgres|ECONNREFUSED|select|insert/i);
      }
      const ready = await on(b, "GET", "/readyz");
      expect(ready.status).toBe(503);
      expect(ready.headers.get("retry-after")).toBe("1");
      expect((await on(b, "GET", "/healthz")).status).toBe(200);
    } finally {
      await proxy.restore();
    }
    await until("B serves again", async () => (await on(b, "GET", "/v1/keys")).status === 200, 20_000, 200);
    expect((await on(b, "POST", "/v1/keys", { name: "After the outage", plan: "free" })).status).toBe(201);
    expect((await on(b, "GET", "/readyz")).status).toBe(200);
  });
});
