import * as grpc from "@grpc/grpc-js";
import { openSqlite } from "../../../lib/sqlite.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorInfoOf, fieldViolationsOf } from "../../../lib/grpc-status-details.ts";
import { IDEMPOTENCY_TTL_MS } from "../../../pet-service/idempotency.ts";
import { EXPIRED_KEYS_PER_CREATE } from "../../../pet-service/store/sqlite/idempotency.ts";
import type { CreatePetRequestInit, CreatePetResponse } from "../../../proto/generated/petstore-v1.ts";
import { petClient, rejection, startPetService, testDbPath, type PetClient, type RunningPetService } from "../../../testkit/pet-service.ts";

// CreatePet with a request_id over real gRPC and a real SQLite file; time moves on an injected clock.
const clock = { now: Date.UTC(2030, 0, 1) };
let service: RunningPetService;
let client: PetClient;

beforeAll(async () => {
  service = await startPetService({ clock: () => clock.now });
  client = petClient(service.address);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
});

/** CreatePet's whole response (the helper's create() keeps only the pet). */
function createPet(request: CreatePetRequestInit, on: PetClient = client): Promise<CreatePetResponse> {
  return new Promise((resolve, reject) =>
    on.CreatePet!(request, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null, res: CreatePetResponse) =>
      err ? reject(err) : resolve(res),
    ),
  );
}


/** A read-only look at the database behind the API. */
async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  const db = openSqlite(service.dbPath, { readOnly: true });
  try {
    return db.prepare(sql).all(...(params as string[])) as T[];
  } finally {
    db.close();
  }
}

async function petsNamed(name: string): Promise<number> {
  const [row] = await query<{ n: number }>("SELECT count(*) AS n FROM pets WHERE name = ?", [name]);
  return row!.n;
}

let unique = 0;
/** A fresh request_id and pet name per test, so tests sharing the service do not see each other. */
const fresh = (label: string) => ({ requestId: `${label}-${++unique}`, name: `${label} ${unique}` });

describe("CreatePet with a request_id", () => {
  it("answers a retry with the original pet, replayed, and stores one animal", async () => {
    const { requestId, name } = fresh("retry");
    const first = await createPet({ name, categoryId: "7", requestId });
    expect(first).toEqual({
      pet: { id: expect.stringMatching(/^[1-9]\d*$/), name, categoryId: "7", status: "PET_STATUS_AVAILABLE" },
      replayed: false,
    });
    const again = await createPet({ name, categoryId: "7", requestId });
    expect(again).toEqual({ pet: first.pet, replayed: true });
    expect(await petsNamed(name)).toBe(1);
    expect(await query("SELECT request_id, pet_id, created_at FROM idempotency_keys WHERE request_id = ?", [requestId])).toEqual([
      { request_id: requestId, pet_id: Number(first.pet!.id), created_at: clock.now },
    ]);
  });

  it("compares requests after normalisation: trimmed name, omitted status = available", async () => {
    const { requestId, name } = fresh("normalised");
    const first = await createPet({ name, categoryId: "3", requestId });
    const again = await createPet({ name: `  ${name}\t`, categoryId: "3", status: "PET_STATUS_AVAILABLE", requestId });
    expect(again).toEqual({ pet: first.pet, replayed: true });
  });

  it.each([
    ["name", { name: "Other", categoryId: "5" }],
    ["category_id", { categoryId: "6" }],
    ["status", { categoryId: "5", status: "PET_STATUS_SOLD" as const }],
  ])("refuses the same request_id with a different %s: FAILED_PRECONDITION, reason IDEMPOTENCY_KEY_REUSED", async (_field, change) => {
    const { requestId, name } = fresh("reused");
    const first = await createPet({ name, categoryId: "5", requestId });
    const error = await rejection(createPet({ name, ...change, requestId }));
    expect(error.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(error.details).toMatch(/^request_id was already used in the last 24 hours for a different request/);
    expect(errorInfoOf(error)).toMatchObject({ reason: "IDEMPOTENCY_KEY_REUSED", domain: "petstore.v1" });
    expect(fieldViolationsOf(error)).toEqual([]);
    expect(await petsNamed(name)).toBe(1);
    expect(await petsNamed("Other")).toBe(0);
    // The key still answers its own request.
    expect(await createPet({ name, categoryId: "5", requestId })).toEqual({ pet: first.pet, replayed: true });
  });

  it("creates exactly one animal for 20 concurrent calls with one request_id, and all get it", async () => {
    const { requestId, name } = fresh("concurrent");
    // Separate channels, so the calls really are in flight together.
    const clients = Array.from({ length: 4 }, () => petClient(service.address));
    try {
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => createPet({ name, categoryId: "9", requestId }, clients[i % clients.length])),
      );
      expect(new Set(responses.map((r) => r.pet!.id)).size).toBe(1);
      expect(responses.filter((r) => !r.replayed)).toHaveLength(1);
      expect(await petsNamed(name)).toBe(1);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it("keeps plain creates and idempotent creates apart when they run concurrently", async () => {
    const { name } = fresh("mixed");
    const calls = Array.from({ length: 30 }, (_, i) =>
      i % 3 === 0 ? createPet({ name, categoryId: "4" }) : createPet({ name, categoryId: "4", requestId: `mixed-key-${unique}-${i % 2}` }),
    );
    const responses = await Promise.all(calls);
    // 10 plain creates, and two keys shared by the other 20 calls: 12 animals.
    expect(await petsNamed(name)).toBe(12);
    expect(new Set(responses.map((r) => r.pet!.id)).size).toBe(12);
  });

  it("forgets a request_id after 24 hours: the same request then creates a new animal", async () => {
    const { requestId, name } = fresh("expiry");
    const first = await createPet({ name, categoryId: "2", requestId });
    clock.now += IDEMPOTENCY_TTL_MS - 1;
    expect(await createPet({ name, categoryId: "2", requestId })).toEqual({ pet: first.pet, replayed: true });
    clock.now += 1;
    const later = await createPet({ name, categoryId: "2", requestId });
    expect(later.replayed).toBe(false);
    expect(later.pet!.id).not.toBe(first.pet!.id);
    expect(await petsNamed(name)).toBe(2);
    // The key now belongs to the new create, for another 24 hours.
    expect(await createPet({ name, categoryId: "2", requestId })).toEqual({ pet: later.pet, replayed: true });
    clock.now += IDEMPOTENCY_TTL_MS;
    // Expired, a key may even carry a different request.
    expect((await createPet({ name: `${name} b`, categoryId: "2", requestId })).replayed).toBe(false);
  });

  it("deletes expired keys lazily, a bounded batch per create", async () => {
    const { requestId, name } = fresh("cleanup");
    for (let i = 0; i < EXPIRED_KEYS_PER_CREATE + 5; i++) await createPet({ name, categoryId: "1", requestId: `${requestId}-old-${i}` });
    const keyCount = async () => (await query<{ n: number }>("SELECT count(*) AS n FROM idempotency_keys"))[0]!.n;
    const total = await keyCount(); // this test's keys and the earlier tests'
    clock.now += IDEMPOTENCY_TTL_MS + 1; // every one of them expired

    await createPet({ name, categoryId: "1", requestId: `${requestId}-new-0` });
    expect(await keyCount()).toBe(total - EXPIRED_KEYS_PER_CREATE + 1);
    const batches = Math.ceil(total / EXPIRED_KEYS_PER_CREATE);
    for (let i = 1; i < batches; i++) await createPet({ name, categoryId: "1", requestId: `${requestId}-new-${i}` });
    const left = await query<{ request_id: string }>("SELECT request_id FROM idempotency_keys");
    expect(left.map((r) => r.request_id).sort()).toEqual(Array.from({ length: batches }, (_, i) => `${requestId}-new-${i}`).sort());
  });

  it("creates a new animal per call without a request_id, and per distinct request_id", async () => {
    const { name } = fresh("plain");
    const a = await createPet({ name, categoryId: "1" });
    const b = await createPet({ name, categoryId: "1", requestId: "" });
    const c = await createPet({ name, categoryId: "1", requestId: `${name}-1` });
    const d = await createPet({ name, categoryId: "1", requestId: `${name}-2` });
    expect([a, b, c, d].map((r) => r.replayed)).toEqual([false, false, false, false]);
    expect(new Set([a, b, c, d].map((r) => r.pet!.id)).size).toBe(4);
    expect(await petsNamed(name)).toBe(4);
  });

  it("accepts 1..320 printable ASCII characters, spaces and quotes included", async () => {
    for (const requestId of ["x", "~".repeat(320), ' a "quoted" \\ key ']) {
      expect((await createPet({ name: "Ascii", categoryId: "1", requestId })).replayed).toBe(false);
    }
  });

  it.each([
    ["longer than 320 characters", "k".repeat(321), /^request_id must be at most 320 characters \(got 321\)$/],
    ["with a non-ASCII character", "clé", /^request_id must be printable ASCII/],
    ["with a control character", "a\nb", /^request_id must be printable ASCII/],
  ])("refuses a request_id %s with INVALID_ARGUMENT naming request_id, with the pet's own violations", async (_label, requestId, description) => {
    const error = await rejection(createPet({ name: "", categoryId: "1", requestId }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(error)).toEqual([
      { field: "name", description: "name is required" },
      { field: "request_id", description: expect.stringMatching(description) },
    ]);
  });

  it("creates one animal when two services on one database file get the same request_id at once", async () => {
    const db = await testDbPath();
    const services = [await startPetService({ dbPath: db.dbPath }), await startPetService({ dbPath: db.dbPath })];
    const clients = services.map((s) => petClient(s.address));
    try {
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => createPet({ name: "Shared", categoryId: "1", requestId: "two-writers" }, clients[i % 2])),
      );
      expect(new Set(responses.map((r) => r.pet!.id)).size).toBe(1);
      expect(responses.filter((r) => !r.replayed)).toHaveLength(1);
    } finally {
      for (const c of clients) c.close();
      for (const s of services) await s.stop();
      await db.remove();
    }
  });

  it("keeps its keys across a restart: a retry after it still gets the original pet", async () => {
    const db = await testDbPath();
    let first = await startPetService({ dbPath: db.dbPath, clock: () => clock.now });
    let c = petClient(first.address);
    try {
      const created = await createPet({ name: "Durable", categoryId: "8", requestId: "restart-1" }, c);
      c.close();
      await first.stop();
      first = await startPetService({ dbPath: db.dbPath, clock: () => clock.now });
      c = petClient(first.address);
      expect(await createPet({ name: "Durable", categoryId: "8", requestId: "restart-1" }, c)).toEqual({ pet: created.pet, replayed: true });
    } finally {
      c.close();
      await first.stop();
      await db.remove();
    }
  });
});
