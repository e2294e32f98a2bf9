/**
 * A storage fault the suite can cause without mounting anything: another connection holds the
 * SQLite write lock past busy_timeout (5 s). The create answers UNAVAILABLE with the fault and a
 * retry delay, is counted, stores nothing; reads go on; the next create, once the lock is gone,
 * succeeds. (A full disk and a read-only file system: tests/faults/pet-service/storage-faults.test.ts.)
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { errorInfoOf, retryDelayOf } from "../../../lib/grpc-status-details.ts";
import { createPetServiceMetrics } from "../../../pet-service/metrics.ts";
import { petClient, rejection, sideConnection, startPetService, type PetClient, type RunningPetService } from "../../../testkit/pet-service.ts";

const metrics = createPetServiceMetrics();
let service: RunningPetService;
let client: PetClient;

beforeAll(async () => {
  service = await startPetService({ metrics });
  client = petClient(service.address);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
});

it("a write lock held past busy_timeout: UNAVAILABLE (busy) with a retry delay, counted; reads go on; then writes resume", { timeout: 30_000 }, async () => {
  const kept = await client.create({ name: "Kept", categoryId: "1" });
  const db = await sideConnection(service.dbPath);
  await db.exec("BEGIN EXCLUSIVE");
  try {
    const error = await rejection(client.create({ name: "Locked out", categoryId: "1" }, { timeoutMs: 20_000 }));
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(error.details).toBe("storage unavailable: the database is busy (a lock, a timeout or every connection in use); retry later"); // nothing of SQLite's own message
    expect(errorInfoOf(error)).toMatchObject({ reason: "STORAGE_UNAVAILABLE", metadata: { fault: "busy" } });
    expect(retryDelayOf(error)).toBe(5_000);
    expect((await client.list({ limit: 10 })).map((p) => p.name)).toEqual(["Kept"]);
  } finally {
    await db.exec("ROLLBACK");
    await db.close();
  }
  const after = await client.create({ name: "After", categoryId: "1" });
  expect(BigInt(after.id)).toBeGreaterThan(BigInt(kept.id));
  expect((await client.list({ limit: 10 })).map((p) => p.name)).toEqual(["Kept", "After"]);
  const counted = (await metrics.storageFaults.get()).values.find((v) => v.labels.fault === "busy");
  expect(counted?.value).toBe(1);
});
