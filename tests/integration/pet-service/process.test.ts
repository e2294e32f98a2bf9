import { writeFile } from "node:fs/promises";
import net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Pet } from "../../../proto/generated/petstore-v1.ts";
import { freePort } from "../../../testkit/net.ts";
import {
  checkHealth,
  petClient,
  runPetServiceToExit,
  sideConnection,
  spawnPetService,
  startPetService,
  testDbPath,
  type PetClient,
  type SpawnedPetService,
} from "../../../testkit/pet-service.ts";

/** Processes, clients and databases a test opened; each test's leftovers are removed after it. */
const running: SpawnedPetService[] = [];
const clients: PetClient[] = [];
const dbs: { remove(): Promise<void> }[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(running.splice(0).map((s) => s.kill("SIGKILL")));
  await Promise.all(dbs.splice(0).map((d) => d.remove()));
});

async function newDbPath(): Promise<string> {
  const db = await testDbPath();
  dbs.push(db);
  return db.dbPath;
}

async function spawn(dbPath: string): Promise<{ service: SpawnedPetService; client: PetClient }> {
  const service = await spawnPetService({ dbPath });
  running.push(service);
  const client = petClient(service.address);
  clients.push(client);
  return { service, client };
}

describe("start-up failures: exit 1 with one line naming the variable", () => {
  it.each([
    ["PET_SERVICE_PORT", { PET_SERVICE_PORT: "eighty" }],
    ["PET_SERVICE_PORT", { PET_SERVICE_PORT: "70000" }],
    ["PET_SERVICE_HOST", { PET_SERVICE_HOST: "no such host!" }],
    ["METRICS_PORT", { METRICS_PORT: "nine" }],
    ["METRICS_PORT", { METRICS_PORT: "65536" }],
    ["METRICS_PORT", { METRICS_PORT: "50051" }],
  ])("%s: %j", async (variable, env) => {
    const { code, stdout, stderr } = await runPetServiceToExit(env);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(new RegExp(`^invalid configuration: ${variable} [^\\n]+\\n$`));
  });

  it("PETS_DB that cannot be created", async () => {
    const file = `${await newDbPath()}.not-a-dir`;
    await writeFile(file, "");
    const { code, stderr } = await runPetServiceToExit({ PETS_DB: `${file}/pets.sqlite` });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^invalid configuration: PETS_DB cannot be opened [^\n]+\n$/);
  });

  it("a PostgreSQL PETS_DB nobody answers at: one line naming it, the password masked", async () => {
    const port = await freePort();
    const { code, stdout, stderr } = await runPetServiceToExit({ PETS_DB: `postgres://pets:s3cret@127.0.0.1:${port}/pets` });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(new RegExp(`^invalid configuration: PETS_DB cannot be opened \\(got "postgres://pets:\\*\\*\\*@127\\.0\\.0\\.1:${port}/pets"\\): [^\\n]*ECONNREFUSED[^\\n]*\\n$`));
    expect(stderr).not.toContain("s3cret");
  });

  it("PET_SERVICE_PORT already in use", async () => {
    const other = await startPetService();
    try {
      const { code, stderr } = await runPetServiceToExit({ PET_SERVICE_PORT: String(other.port) });
      expect(code).toBe(1);
      const line = new RegExp(`^invalid configuration: PET_SERVICE_PORT cannot listen on 127\\.0\\.0\\.1:${other.port}\\b[^\\n]+\\n$`);
      expect(stderr).toMatch(line);
    } finally {
      await other.stop();
    }
  });

  it("METRICS_PORT already in use", async () => {
    const other = net.createServer();
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const { port } = other.address() as net.AddressInfo;
    try {
      const { code, stdout, stderr } = await runPetServiceToExit({ PET_SERVICE_PORT: "0", METRICS_PORT: String(port) });
      expect(code).toBe(1);
      expect(stdout).toBe("");
      expect(stderr).toMatch(new RegExp(`^invalid configuration: METRICS_PORT cannot listen on 127\\.0\\.0\\.1:${port}\\b[^\\n]+\\n$`));
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

it("logs JSON (bound address, caller's x-request-id), stops on SIGINT with 0, and keeps the data across a restart", async () => {
  const dbPath = await newDbPath();
  const first = await spawn(dbPath);
  const metadata = new grpc.Metadata();
  metadata.set("x-request-id", "req-7f3a");
  const pet = await first.client.create({ name: "Rex", categoryId: "4", status: "PET_STATUS_PENDING" }, { metadata });

  // The log line and the answer travel on different pipes: wait for the line to arrive.
  await vi.waitFor(() => {
    const lines = first.service.output().trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ msg: "pet-service listening", address: first.service.address }));
    // No METRICS_PORT: no HTTP listener.
    expect(lines.find((l) => l.msg === "pet-service listening")).not.toHaveProperty("metricsPort");
    expect(lines).toContainEqual(expect.objectContaining({ rpc: "CreatePet", requestId: "req-7f3a", code: "OK" }));
  });
  expect(await first.service.kill("SIGINT")).toBe(0);

  const second = await spawn(dbPath);
  expect(await second.client.get(pet.id)).toEqual(pet);
  expect(await second.client.list()).toEqual([pet]);
});

it.each([
  ["one at a time", 1],
  ["with 100 in flight", 100],
])("keeps every create acknowledged before a kill -9 (%s)", async (_, concurrency) => {
  const dbPath = await newDbPath();
  const { service, client } = await spawn(dbPath);
  const acknowledged: Pet[] = [];
  const createUntilKilled = async (worker: number) => {
    for (let i = 0; acknowledged.length < 10; i++) {
      const pet = await client.create({ name: `w${worker} #${i}`, categoryId: "9" });
      acknowledged.push(pet);
      // SIGKILL the moment the 10th answer arrives (with the rest still in flight, if any).
      if (acknowledged.length === 10) service.child.kill("SIGKILL");
    }
  };
  await Promise.allSettled(Array.from({ length: concurrency }, (_, worker) => createUntilKilled(worker)));
  expect(await service.kill()).toBeNull();
  expect(acknowledged.length).toBeGreaterThanOrEqual(10);

  const restarted = await spawn(dbPath);
  for (const pet of acknowledged) expect(await restarted.client.get(pet.id)).toEqual(pet);
});

it("on SIGTERM: refuses new connections, finishes the in-flight calls, exits 0 within 10 s", async () => {
  const dbPath = await newDbPath();
  const { service, client } = await spawn(dbPath);
  await client.create({ name: "warm-up", categoryId: "1" });

  // Another connection holds SQLite's write lock, so the creates below wait (busy_timeout) in flight.
  const lock = await sideConnection(dbPath);
  await lock.exec("BEGIN IMMEDIATE");
  const calls = Array.from({ length: 20 }, (_, i) => client.create({ name: `drain ${i}`, categoryId: "1" }, { timeoutMs: 15_000 }));
  // Answered without storage, on the same connection after the creates: once it is back, they are in the server.
  await expect(client.list({ limit: 101 })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });

  const signalled = Date.now();
  const exited = service.kill("SIGTERM");
  await vi.waitFor(
    () => expect(checkHealth(service.address, "", { timeoutMs: 1_000 })).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE }),
    { timeout: 5_000, interval: 50 },
  );
  expect(service.child.exitCode).toBeNull();

  await lock.exec("COMMIT");
  await lock.close();
  const pets = await Promise.all(calls);
  expect(await exited).toBe(0);
  expect(Date.now() - signalled).toBeLessThan(10_000);

  const restarted = await spawn(dbPath);
  const stored = await restarted.client.list({ limit: 100 });
  expect(stored.map((p) => p.id)).toEqual(expect.arrayContaining(pets.map((p) => p.id)));
});
