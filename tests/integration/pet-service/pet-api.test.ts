import { createRequire } from "node:module";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { fieldViolationsOf } from "../../../pet-service/grpc-errors.ts";
import type { CreatePetRequestInit, Pet, PetStatus } from "../../../proto/generated/petstore-v1.ts";
import { checkHealth, freshService, HealthClient, rejection, sideConnection, startPetService } from "../../../testkit/pet-service.ts";

const unknownStatus = (n: number) => n as unknown as PetStatus;

describe("CreatePet and GetPet", () => {
  const { client } = freshService();

  it("assigns the id, trims the name, defaults the status to available, and GetPet returns the same pet", async () => {
    const pet = await client().create({ name: "  Rex  ", categoryId: "3" });
    expect(pet).toEqual({ id: expect.stringMatching(/^[1-9]\d*$/), name: "Rex", categoryId: "3", status: "PET_STATUS_AVAILABLE" });
    expect(await client().get(pet.id)).toEqual(pet);
  });

  it.each(["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"] as const)("stores status %s", async (status) => {
    const pet = await client().create({ name: "Tom", categoryId: "1", status });
    expect((await client().get(pet.id)).status).toBe(status);
  });

  it("keeps a category id of 2^63-1 exact", async () => {
    const pet = await client().create({ name: "Max", categoryId: "9223372036854775807" });
    expect((await client().get(pet.id)).categoryId).toBe("9223372036854775807");
  });

  it("accepts 100 code points and stores them unchanged", async () => {
    const name = "🐾".repeat(50) + "é".repeat(50);
    expect((await client().create({ name, categoryId: "1" })).name).toBe(name);
  });

  it("assigns increasing ids", async () => {
    const ids: bigint[] = [];
    for (let i = 0; i < 5; i++) ids.push(BigInt((await client().create({ name: `n${i}`, categoryId: "1" })).id));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
  });

  it.each<[string, CreatePetRequestInit, Record<string, RegExp>]>([
    ["no name", { categoryId: "1" }, { name: /^name is required$/ }],
    ["a blank name", { name: " \t ", categoryId: "1" }, { name: /^name is required$/ }],
    ["101 code points", { name: "🐾".repeat(101), categoryId: "1" }, { name: /^name must be at most 100 characters/ }],
    ["a control character", { name: "Re\u0007x", categoryId: "1" }, { name: /^name must not contain control characters$/ }],
    ["no category_id", { name: "Rex" }, { category_id: /^category_id is required$/ }],
    ["a negative category_id", { name: "Rex", categoryId: "-2" }, { category_id: /^category_id must be a positive integer/ }],
    ["category_id 0 (set, so not missing)", { name: "Rex", categoryId: "0" }, { category_id: /^category_id must be a positive integer, 1 to 9223372036854775807 \(got 0\)$/ }],
    ["a status outside the enum", { name: "Rex", categoryId: "1", status: unknownStatus(9) }, { status: /^status must be one of/ }],
    [
      "everything wrong",
      { name: "", categoryId: "0", status: unknownStatus(4) },
      { name: /required/, category_id: /must be a positive integer/, status: /must be one of/ },
    ],
  ])("refuses %s with INVALID_ARGUMENT naming each field, and stores nothing", async (_, request, expected) => {
    const before = await client().list({ limit: 100 });
    const error = await rejection(client().create(request));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    const violations = fieldViolationsOf(error);
    expect(violations.map((v) => v.field)).toEqual(Object.keys(expected));
    for (const { field, description } of violations) {
      expect(description).toMatch(expected[field]!);
      expect(error.details).toContain(description);
    }
    expect(await client().list({ limit: 100 })).toEqual(before);
  });

  it("GetPet: NOT_FOUND for any id that names no pet (0 and negative ids included), INVALID_ARGUMENT for a missing id", async () => {
    for (const id of ["987654321", "0", "-1", "-9223372036854775808"]) {
      const missing = await rejection(client().get(id));
      expect(missing.code).toBe(grpc.status.NOT_FOUND);
      expect(missing.details).toBe(`pet ${id} not found`);
    }
    const unset = await rejection(client().get(undefined));
    expect(unset.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(unset)).toEqual([{ field: "id", description: "id is required" }]);
  });
});

describe("ListPets", () => {
  const { client } = freshService();
  const statuses = ["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"] as const;
  let created: Pet[];

  beforeAll(async () => {
    created = [];
    for (let i = 0; i < 30; i++) created.push(await client().create({ name: `pet ${i}`, categoryId: "1", status: statuses[i % 3] }));
  });

  it("returns 20 pets in ascending id order when the limit is absent or 0", async () => {
    expect(await client().list()).toEqual(created.slice(0, 20));
    expect(await client().list({ limit: 0 })).toEqual(created.slice(0, 20));
  });

  it("honours limits 1..100", async () => {
    expect(await client().list({ limit: 1 })).toEqual(created.slice(0, 1));
    expect(await client().list({ limit: 7 })).toEqual(created.slice(0, 7));
    expect(await client().list({ limit: 100 })).toEqual(created);
  });

  it.each([101, -1, 1000])("refuses limit %d with INVALID_ARGUMENT naming limit", async (limit) => {
    const error = await rejection(client().list({ limit }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(error)).toEqual([{ field: "limit", description: `limit must be between 1 and 100 (got ${limit})` }]);
  });

  it.each(statuses)("filters by %s, in ascending id order, within the limit", async (status) => {
    const matching = created.filter((p) => p.status === status);
    expect(await client().list({ status, limit: 100 })).toEqual(matching);
    expect(await client().list({ status, limit: 3 })).toEqual(matching.slice(0, 3));
  });

  it("treats PET_STATUS_UNSPECIFIED as no filter and refuses statuses outside the enum", async () => {
    expect(await client().list({ status: "PET_STATUS_UNSPECIFIED", limit: 100 })).toEqual(created);
    const error = await rejection(client().list({ status: unknownStatus(42) }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolationsOf(error).map((v) => v.field)).toEqual(["status"]);
  });
});

describe("ids", () => {
  const { service, client } = freshService();

  it("gives 200 concurrent creates 200 distinct ids, all stored", async () => {
    const pets = await Promise.all(Array.from({ length: 200 }, (_, i) => client().create({ name: `c${i}`, categoryId: "2" })));
    expect(new Set(pets.map((p) => p.id)).size).toBe(200);
    expect(await Promise.all(pets.map((p) => client().get(p.id)))).toEqual(pets);
  });

  it("keeps ids above 2^53 exact, and continues after them", async () => {
    const db = await sideConnection(service().dbPath);
    await db.exec("INSERT INTO pets (id, name, category_id, status) VALUES (9007199254740993, 'Big', 5, 'sold')");
    await db.close();
    expect(await client().get("9007199254740993")).toMatchObject({ id: "9007199254740993", name: "Big", status: "PET_STATUS_SOLD" });
    expect((await client().create({ name: "Next", categoryId: "1" })).id).toBe("9007199254740994");
    expect((await client().list({ status: "PET_STATUS_SOLD", limit: 100 })).map((p) => p.id)).toContain("9007199254740993");
  });

  it("never reuses an id, even after the newest pet is deleted", async () => {
    const last = await client().create({ name: "Last", categoryId: "1" });
    const db = await sideConnection(service().dbPath);
    await db.exec(`DELETE FROM pets WHERE id = ${last.id}`);
    await db.close();
    expect(BigInt((await client().create({ name: "After", categoryId: "1" })).id)).toBeGreaterThan(BigInt(last.id));
  });
});

describe("failures", () => {
  const { service, client } = freshService();

  it("answers INTERNAL with a generic message when storage fails, leaking no SQL or path", async () => {
    const db = await sideConnection(service().dbPath);
    await db.exec("DROP TABLE pets");
    await db.close();
    const error = await rejection(client().create({ name: "Rex", categoryId: "1" }));
    expect(error.code).toBe(grpc.status.INTERNAL);
    expect(error.details).toBe("internal error");
  });
});

describe("health and reflection", () => {
  const { service } = freshService();

  it("reports SERVING for the server and for petstore.v1.PetService, NOT_FOUND for unknown services", async () => {
    expect(await checkHealth(service().address)).toBe("SERVING");
    expect(await checkHealth(service().address, "petstore.v1.PetService")).toBe("SERVING");
    const error = await rejection(checkHealth(service().address, "no.such.Service"));
    expect(error.code).toBe(grpc.status.NOT_FOUND);
  });

  it("tells health watchers NOT_SERVING when shutdown begins", async () => {
    const running = await startPetService();
    const client = new HealthClient(running.address, grpc.credentials.createInsecure());
    const watch = client.Watch!({ service: "" }) as grpc.ClientReadableStream<{ status: string }>;
    watch.on("error", () => {}); // the CANCELLED that follows watch.cancel()
    const seen: string[] = [];
    const notServing = new Promise<void>((resolve) =>
      watch.on("data", ({ status }: { status: string }) => seen.push(status) && status === "NOT_SERVING" && resolve()),
    );
    await vi.waitFor(() => expect(seen).toEqual(["SERVING"]));

    const stopped = running.stop();
    await notServing;
    // A watcher that hangs up lets the drain finish at once instead of at the grace period.
    watch.cancel();
    client.close();
    await stopped;
    expect(seen).toEqual(["SERVING", "NOT_SERVING"]);
  });

  it("lists and describes petstore.v1.PetService through server reflection (what grpcurl uses)", async () => {
    const responses = await reflect(service().address, [
      { listServices: "" },
      { fileContainingSymbol: "petstore.v1.PetService" },
    ]);
    const names = responses[0]!.listServicesResponse!.service.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["petstore.v1.PetService", "grpc.health.v1.Health"]));
    const files = responses[1]!.fileDescriptorResponse!.fileDescriptorProto.map((b) => b.toString("latin1"));
    expect(files.join("")).toContain("CreatePet");
  });
});

interface ReflectionResponse {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
}

/** grpc.reflection.v1.ServerReflection/ServerReflectionInfo: one response per request, in order. */
async function reflect(address: string, requests: object[]): Promise<ReflectionResponse[]> {
  const protoDir = path.join(path.dirname(createRequire(import.meta.url).resolve("@grpc/reflection/package.json")), "build/proto");
  const definition = protoLoader.loadSync("grpc/reflection/v1/reflection.proto", { includeDirs: [protoDir], defaults: true });
  const Reflection = grpc.makeClientConstructor(
    definition["grpc.reflection.v1.ServerReflection"] as grpc.ServiceDefinition,
    "ServerReflection",
  );
  const client = new Reflection(address, grpc.credentials.createInsecure());
  try {
    const stream = client.ServerReflectionInfo!() as grpc.ClientDuplexStream<object, ReflectionResponse>;
    const responses: ReflectionResponse[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on("data", (r: ReflectionResponse) => responses.push(r) === requests.length && stream.end());
      stream.on("end", resolve);
      stream.on("error", reject);
    });
    for (const request of requests) stream.write(request);
    await done;
    return responses;
  } finally {
    client.close();
  }
}
