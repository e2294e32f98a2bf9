/**
 * Health follows the database's reachability, not its load: a PostgreSQL pool whose every
 * connection is in use (slow statements, lock waits) keeps petstore.v1.PetService SERVING.
 * (The database actually unreachable: tests/integration/gateway/database-outage.test.ts.)
 */
import * as grpc from "@grpc/grpc-js";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger } from "../../../lib/logger.js";
import { PET_SERVICE_NAME } from "../../../proto/load.js";
import { createServer, type PetServer } from "../../../pet-service/server.js";
import { PostgresPetStore } from "../../../pet-service/store/postgres-pet-store.js";
import { HealthClient, petClient, rejection, type PetClient } from "../../helpers/pet-service.js";
import { createTestDatabase, type TestDatabase } from "../../helpers/postgres.js";

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
