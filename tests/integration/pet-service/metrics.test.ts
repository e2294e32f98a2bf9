/**
 * Operating the pet service: Prometheus metrics on METRICS_PORT (GET /metrics, GET /healthz over
 * plain HTTP beside gRPC) and one JSON log line per call carrying the caller's x-request-id.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPetServiceMetrics } from "../../../pet-service/metrics.ts";
import {
  petClient,
  sideConnection,
  spawnPetService,
  startPetService,
  type PetClient,
  type SpawnedPetService,
} from "../../../testkit/pet-service.ts";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped; label values unescaped). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The one sample with this name whose labels include `labels`; undefined when there is none. */
function sample(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

const grpcError = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail("expected the call to fail"),
    (err: grpc.ServiceError) => err,
  );

describe("a spawned pet service with METRICS_PORT", () => {
  let service: SpawnedPetService;
  let client: PetClient;
  let base: string;

  beforeAll(async () => {
    service = await spawnPetService({ env: { METRICS_PORT: "0" } });
    client = petClient(service.address);
    expect(service.metricsPort).toEqual(expect.any(Number));
    base = `http://127.0.0.1:${service.metricsPort}`;

    // One call of each outcome the assertions below count.
    const metadata = new grpc.Metadata();
    metadata.set("x-request-id", "req-abc-123");
    const pet = await client.create({ name: "Rex", categoryId: "4" }, { metadata });
    await client.list({});
    expect((await grpcError(client.get(String(BigInt(pet.id) + 1000n)))).code).toBe(grpc.status.NOT_FOUND);
    expect((await grpcError(client.create({ name: "  ", categoryId: "4" }))).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  afterAll(async () => {
    client?.close();
    await service?.stop();
  });

  it("logs one JSON line per call with the caller's x-request-id, the rpc, the code and the time taken", async () => {
    // The log line and the answer travel on different pipes: wait for the line to arrive.
    await vi.waitFor(() => {
      const lines = service
        .output()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const tagged = lines.filter((l) => l.requestId === "req-abc-123");
      expect(tagged).toEqual([
        expect.objectContaining({ name: "pet-service", msg: "rpc", rpc: "CreatePet", code: "OK", ms: expect.any(Number) }),
      ]);
      // Calls without the metadata are logged too, just without a requestId.
      expect(lines).toContainEqual(expect.objectContaining({ rpc: "GetPet", code: "NOT_FOUND" }));
      expect(lines.find((l) => l.rpc === "GetPet")).not.toHaveProperty("requestId");
    });
  });

  it("serves Prometheus text on GET /metrics: calls by method and code, latency histograms, SQLite query latency", async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parseExposition(await res.text());

    const handled = (method: string, code: string) => sample(samples, "pet_service_grpc_server_handled_total", { method, code });
    expect(handled("CreatePet", "OK")).toBe(1);
    expect(handled("CreatePet", "INVALID_ARGUMENT")).toBe(1);
    expect(handled("ListPets", "OK")).toBe(1);
    expect(handled("GetPet", "NOT_FOUND")).toBe(1);
    expect(handled("GetPet", "OK")).toBeUndefined();
    // Health checks (the helper polls grpc.health.v1 until SERVING) are not PetService calls.
    expect(samples.filter((s) => s.name === "pet_service_grpc_server_handled_total")).toHaveLength(4);

    const duration = "pet_service_grpc_server_duration_seconds";
    for (const [method, code] of [["CreatePet", "OK"], ["CreatePet", "INVALID_ARGUMENT"], ["ListPets", "OK"], ["GetPet", "NOT_FOUND"]] as const) {
      expect(sample(samples, `${duration}_count`, { method, code })).toBe(1);
      expect(sample(samples, `${duration}_bucket`, { method, code, le: "+Inf" })).toBe(1);
      expect(sample(samples, `${duration}_sum`, { method, code })).toBeGreaterThan(0);
    }

    // The refused create never reached SQLite: one statement of each kind ran.
    const query = "pet_service_sqlite_query_duration_seconds";
    for (const name of ["insert_pet", "list_pets", "get_pet"]) {
      expect(sample(samples, `${query}_count`, { query: name })).toBe(1);
      expect(sample(samples, `${query}_bucket`, { query: name, le: "+Inf" })).toBe(1);
      expect(sample(samples, `${query}_sum`, { query: name })).toBeGreaterThan(0);
    }
    // Labels are query names, never SQL text.
    const queries = new Set(samples.filter((s) => s.name.startsWith(query)).map((s) => s.labels.query));
    expect([...queries].sort()).toEqual(["get_pet", "insert_pet", "list_pets"]);

    // Process metrics (collectDefaultMetrics in main).
    expect(sample(samples, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(sample(samples, "nodejs_eventloop_lag_seconds")).toEqual(expect.any(Number));
  });

  it("answers GET /healthz, 404 elsewhere and 405 for other methods; no pet data over HTTP", async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    expect((await fetch(`${base}/metrics?x=1`)).status).toBe(200);
    expect((await fetch(`${base}/v1/pets`)).status).toBe(404);
    expect((await fetch(`${base}/`)).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: "POST", body: "" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });
});

it("closes the metrics port on SIGTERM and still exits 0", async () => {
  const service = await spawnPetService({ env: { METRICS_PORT: "0" } });
  try {
    const url = `http://127.0.0.1:${service.metricsPort}/metrics`;
    // fetch keeps the connection alive in its pool: shutdown must not wait for it.
    expect((await fetch(url)).status).toBe(200);
    const signalled = Date.now();
    expect(await service.kill("SIGTERM")).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(5_000);
    await expect(fetch(url)).rejects.toThrow();
  } finally {
    await service.stop();
  }
});

describe("in process (metrics passed to the store and createServer)", () => {
  it("counts a storage failure as INTERNAL and still times the failed statement", async () => {
    const metrics = createPetServiceMetrics();
    const service = await startPetService({ metrics });
    const client = petClient(service.address);
    try {
      const db = await sideConnection(service.dbPath);
      await db.exec("DROP TABLE pets");
      await db.close();
      expect((await grpcError(client.create({ name: "Rex", categoryId: "1" }))).code).toBe(grpc.status.INTERNAL);

      const samples = parseExposition(await metrics.registry.metrics());
      expect(sample(samples, "pet_service_grpc_server_handled_total", { method: "CreatePet", code: "INTERNAL" })).toBe(1);
      expect(sample(samples, "pet_service_sqlite_query_duration_seconds_count", { query: "insert_pet" })).toBe(1);
      // No default (process) metrics unless asked for: main asks, once per process.
      expect(sample(samples, "process_cpu_user_seconds_total")).toBeUndefined();
    } finally {
      client.close();
      await service.stop();
    }
  });

  it("works without metrics (existing callers): nothing is recorded, calls succeed", async () => {
    const service = await startPetService();
    const client = petClient(service.address);
    try {
      expect(await client.create({ name: "Rex", categoryId: "1" })).toMatchObject({ name: "Rex" });
    } finally {
      client.close();
      await service.stop();
    }
  });
});
