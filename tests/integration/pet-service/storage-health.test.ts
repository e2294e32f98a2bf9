/**
 * Health follows the database's reachability, not its load: a PostgreSQL pool whose every
 * connection is in use (slow statements, lock waits) keeps petstore.v1.PetService SERVING.
 * When it is unreachable, the replica finds out and serves again by itself soon after it answers
 * (through the gateway: tests/integration/gateway/database-outage.test.ts).
 */
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger } from "../../../lib/logger.ts";
import { PET_SERVICE_NAME } from "../../../proto/load.ts";
import { createServer, type PetServer } from "../../../pet-service/server.ts";
import { PostgresPetStore } from "../../../pet-service/store/postgres/store.ts";
import { checkHealth, HealthClient, petClient, rejection, type PetClient } from "../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../testkit/postgres.ts";
import { startTcpProxy, viaProxy } from "../../../testkit/tcp-proxy.ts";

let db: TestDatabase;
let store: PostgresPetStore;
let server: PetServer;
let address: string;
let client: PetClient;

beforeAll(async () => {
  db = await createTestDatabase();
  // One connection, pinged often: one slow statement saturates the pool for longer than a ping may take.
  store = await PostgresPetStore.open(db.url, { poolSize: 1 });
  server = createServer({ store, logger: createLogger("pet-service", "silent"), storageHealth: { upIntervalMs: 100, downIntervalMs: 100 } });
  address = `127.0.0.1:${await server.listen("127.0.0.1", 0)}`;
  client = petClient(address);
});

afterAll(async () => {
  client?.close();
  await server?.shutdown();
  await store?.close();
  await db?.drop();
});

it("a saturated pool (every connection busy past the ping timeout) does not make the replica NOT_SERVING", { timeout: 30_000 }, async () => {
  const health = new HealthClient(address, grpc.credentials.createInsecure());
  const watch = health.Watch!({ service: PET_SERVICE_NAME }) as grpc.ClientReadableStream<{ status: string }>;
  watch.on("error", () => {}); // the CANCELLED that follows watch.cancel()
  const seen: string[] = [];
  watch.on("data", ({ status }: { status: string }) => seen.push(status));
  const side = new pg.Client({ connectionString: db.url });
  await side.connect();
  try {
    await expect.poll(() => seen).toEqual(["SERVING"]);
    // The pool's only connection waits on this lock until lock_timeout (3 s): pings queue behind it.
    await side.query("BEGIN");
    await side.query("LOCK TABLE pets IN EXCLUSIVE MODE");
    const blocked = await rejection(client.create({ name: "Blocked", categoryId: "1" }, { timeoutMs: 20_000 }));
    expect(blocked.code).toBe(grpc.status.UNAVAILABLE);
    await side.query("ROLLBACK");
    expect((await client.create({ name: "After", categoryId: "1" })).name).toBe("After");
    expect(seen).toEqual(["SERVING"]);
  } finally {
    watch.cancel();
    health.close();
    await side.end();
  }
});

// An outage a call finds (rather than a ping) must be followed by pings every downIntervalMs, as
// for one a ping finds: the replica serves again soon after the database answers, not only at the
// next ping of the healthy schedule (upIntervalMs, here far away).
it("after a call finds the database unreachable, pings every downIntervalMs and serves again soon after it answers", { timeout: 30_000 }, async () => {
  const proxied = await createTestDatabase();
  const url = new URL(proxied.url);
  const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  const proxiedStore = await PostgresPetStore.open(viaProxy(proxied.url, proxy));
  const pets = createServer({
    store: proxiedStore,
    logger: createLogger("pet-service", "silent"),
    storageHealth: { upIntervalMs: 60_000, downIntervalMs: 100 },
  });
  const at = `127.0.0.1:${await pets.listen("127.0.0.1", 0)}`;
  const calls = petClient(at);
  try {
    expect(await calls.list({ limit: 1 })).toEqual([]);
    // Let the first ping (at listen) finish: the next one is then a minute away.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await checkHealth(at, PET_SERVICE_NAME)).toBe("SERVING");
    await proxy.cut();
    const failed = await rejection(calls.list({ limit: 1 }));
    expect(failed.code).toBe(grpc.status.UNAVAILABLE);
    expect(await checkHealth(at, PET_SERVICE_NAME)).toBe("NOT_SERVING");
    await proxy.restore();
    const restored = Date.now();
    await expect.poll(() => checkHealth(at, PET_SERVICE_NAME), { timeout: 5_000, interval: 50 }).toBe("SERVING");
    expect(Date.now() - restored).toBeLessThan(5_000);
    expect(await calls.list({ limit: 1 })).toEqual([]);
  } finally {
    calls.close();
    await pets.shutdown();
    await proxiedStore.close();
    await proxy.close();
    await proxied.drop();
  }
});
