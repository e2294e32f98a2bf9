import { afterAll, beforeAll, expect, it } from "vitest";
import { checkHealth, spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../testkit/postgres.ts";
import { startTcpProxy, viaProxy, type TcpProxy } from "../../../testkit/tcp-proxy.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { until } from "../../../testkit/until.ts";

// The pet service on PostgreSQL reaches its database through a relay the test cuts: for the
// pet service, PostgreSQL is down (connections reset, new ones refused), while the machine's
// server, shared with other tests, keeps running.

let db: TestDatabase;
let proxy: TcpProxy;
let pets: SpawnedPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let key: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const url = new URL(db.url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  pets = await spawnPetService({ dbPath: viaProxy(db.url, proxy) });
  keys = await createTestKeys();
  key = await keys.issue({ plan: "enterprise", perMinute: 100_000, perDay: 1_000_000 });
  // A deadline far longer than a fast failure: a call that hung on the database would end in 504, not 503.
  gateway = await startGateway({ petServiceAddr: pets.address, keys, timeoutMs: 8_000 });
});

afterAll(async () => {
  await gateway?.close();
  await pets?.kill("SIGKILL");
  await proxy?.close();
  await keys?.remove();
  await db?.drop();
});

const call = (path: string, init: RequestInit = {}) =>
  fetch(`${gateway.url}${path}`, { ...init, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...init.headers } });
const create = (name: string) => call("/v1/pets", { method: "POST", body: JSON.stringify({ name, categoryId: 1 }) });

it("while PostgreSQL is unreachable: NOT_SERVING, fast 503s with Retry-After, /readyz names it; all back by itself", { timeout: 60_000 }, async () => {
  const before = await create("Before");
  expect(before.status).toBe(201);
  const { id } = (await before.json()) as { id: number };
  expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);

  await proxy.cut();

  // Health follows the database (found by the next call or the next ping); liveness ("") does not:
  // an outage of the database must not get every replica restarted.
  await until("PetService health is NOT_SERVING", async () => (await checkHealth(pets.address, "petstore.v1.PetService")) === "NOT_SERVING", 15_000, 100);
  expect(await checkHealth(pets.address, "")).toBe("SERVING");

  for (const res of [await call("/v1/pets"), await create("During"), await call(`/v1/pets?status=sold&limit=5`)]) {
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toEqual({ code: "service_unavailable", message: expect.any(String), status: 503 });
  }
  const ready = await fetch(`${gateway.url}/readyz`);
  expect(ready.status).toBe(503);
  expect(((await ready.json()) as { reasons: string[] }).reasons).toEqual(["pet service NOT_SERVING: database unreachable"]);

  await proxy.restore();

  await until("PetService health is SERVING", async () => (await checkHealth(pets.address, "petstore.v1.PetService")) === "SERVING", 15_000, 100);
  await until("/readyz answers 200", async () => (await fetch(`${gateway.url}/readyz`)).status === 200, 15_000, 100);
  const list = await call("/v1/pets");
  expect(list.status).toBe(200);
  expect(((await list.json()) as { id: number; name: string }[]).map((p) => [p.id, p.name])).toEqual([[id, "Before"]]);
  expect((await create("After")).status).toBe(201);
  // Nothing of the outage reached the log as a crash or an internal error.
  expect(pets.output()).not.toMatch(/"code":"INTERNAL"|rpc failed/);
  expect(pets.child.exitCode).toBeNull();
});
