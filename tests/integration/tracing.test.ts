import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestKeys, type TestKeys } from "../../testkit/gateway.ts";
import { spawnGateway, type GatewayProcess } from "../../testkit/gateway-process.ts";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../../testkit/otlp-receiver.ts";
import * as grpc from "@grpc/grpc-js";
import { petClient, spawnPetService, type SpawnedPetService } from "../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../testkit/postgres.ts";
import { until } from "../../testkit/until.ts";

// One request followed across both real processes into a real OTLP/HTTP receiver: the gateway
// exports protobuf (the default), the pet service JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json).
const SERVER = 2;
const CLIENT = 3;
const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const traceparent = (traceId: string, spanId: string, flags: "01" | "00") => `00-${traceId}-${spanId}-${flags}`;

interface Stack {
  keys: TestKeys;
  pets: SpawnedPetService;
  gateway: GatewayProcess;
  key: string;
}

async function startStack(gatewayEnv: Record<string, string>, petEnv: Record<string, string>): Promise<Stack> {
  const keys = await createTestKeys();
  const pets = await spawnPetService({ env: { METRICS_PORT: "0", ...petEnv } });
  const gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, LOG_LEVEL: "info", ...gatewayEnv });
  return { keys, pets, gateway, key: await keys.issue() };
}

/** Stops both processes (a batch processor flushes what it holds at shutdown). */
async function stopProcesses(stack: Stack): Promise<void> {
  stack.gateway.child.kill("SIGTERM");
  await stack.gateway.exited;
  await stack.pets.stop();
}

async function stopStack(stack: Stack | undefined): Promise<void> {
  if (!stack) return;
  await stopProcesses(stack);
  await stack.keys.remove();
}

/** The JSON log line of `output` written for the request `requestId` with message `msg`. */
function logLine(output: string, requestId: string, msg: string): Record<string, unknown> | undefined {
  const line = output.split("\n").find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes(`"msg":"${msg}"`));
  return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
}

/** GET /v1/pets through the stack's gateway with this request id and, when given, `traceparent`. */
function listPets(stack: Stack, requestId: string, traceparentHeader?: string): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${stack.key}`, "X-Request-Id": requestId };
  if (traceparentHeader !== undefined) headers.traceparent = traceparentHeader;
  return fetch(`${stack.gateway.url}/v1/pets`, { headers });
}

/** The gateway's access log line and the pet service's rpc line of the request, once both are written. */
async function bothLines(stack: Stack, requestId: string): Promise<[Record<string, unknown>, Record<string, unknown>]> {
  await until("both processes' lines", () => logLine(stack.pets.output(), requestId, "rpc") !== undefined && logLine(stack.gateway.output(), requestId, "request") !== undefined);
  return [logLine(stack.gateway.output(), requestId, "request")!, logLine(stack.pets.output(), requestId, "rpc")!];
}

describe("with an OTLP endpoint", () => {
  let receiver: OtlpReceiver;
  let stack: Stack;
  const otel = (receiverUrl: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: "50" });

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    stack = await startStack(otel(receiver.url), { ...otel(receiver.url), OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
  }, 60_000);
  afterAll(async () => {
    await stopStack(stack);
    await receiver?.close();
  });

  const traceOf = (traceId: string) => receiver.spans().filter((s) => s.traceId === traceId);
  const one = (spans: ReceivedSpan[], where: (s: ReceivedSpan) => boolean, what: string) => {
    const found = spans.filter(where);
    expect(found, what).toHaveLength(1);
    return found[0]!;
  };

  describe("a create sent with a sampled traceparent", () => {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const requestId = `trace-create-${randomUUID()}`;
    const petName = `Secret pet ${hex(4)}`;
    const idempotencyKey = `idem-${hex(8)}`;
    let spans: ReceivedSpan[];

    beforeAll(async () => {
      const res = await fetch(`${stack.gateway.url}/v1/pets`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${stack.key}`,
          "Content-Type": "application/json",
          "X-Request-Id": requestId,
          "Idempotency-Key": idempotencyKey,
          traceparent: traceparent(traceId, clientSpan, "01"),
        },
        body: JSON.stringify({ name: petName, categoryId: 7 }),
      });
      expect(res.status).toBe(201);
      await until("the trace's spans from both processes", () => {
        const received = traceOf(traceId);
        return received.some((s) => s.service === "gateway" && s.kind === SERVER) && received.some((s) => s.service === "pet-service" && s.kind === SERVER);
      });
      spans = traceOf(traceId);
    });

    it("makes one trace whose parent chain runs client → gateway → gRPC → pet service → store", () => {
      const server = one(spans, (s) => s.service === "gateway" && s.kind === SERVER, "the gateway's server span");
      expect(server).toMatchObject({
        parentSpanId: clientSpan,
        name: "POST /v1/pets",
        attributes: expect.objectContaining({ "http.route": "/v1/pets", "http.request.method": "POST", "http.response.status_code": 201, "pet_store.request_id": requestId }),
      });
      const limiter = one(spans, (s) => s.name === "limiter decision", "the limiter's span");
      expect(limiter).toMatchObject({ service: "gateway", parentSpanId: server.spanId, attributes: { "pet_store.plan": "business", "pet_store.limiter.outcome": "admitted" } });
      const call = one(spans, (s) => s.service === "gateway" && s.kind === CLIENT, "the gRPC call's span");
      expect(call).toMatchObject({
        parentSpanId: server.spanId,
        name: "petstore.v1.PetService/CreatePet",
        attributes: { "rpc.system": "grpc", "rpc.service": "petstore.v1.PetService", "rpc.method": "CreatePet", "rpc.grpc.status_code": 0 },
      });
      const handler = one(spans, (s) => s.service === "pet-service" && s.kind === SERVER, "the pet service's server span");
      expect(handler).toMatchObject({ parentSpanId: call.spanId, name: "petstore.v1.PetService/CreatePet" });
      const queries = spans.filter((s) => s.service === "pet-service" && s.kind === CLIENT);
      expect(queries.map((q) => q.name)).toEqual(expect.arrayContaining(["INSERT pets", "SELECT idempotency_keys", "COMMIT"]));
      for (const query of queries) {
        expect(query.parentSpanId).toBe(handler.spanId);
        expect(query.attributes).toMatchObject({ "db.system": "sqlite", "db.operation.name": expect.any(String) });
      }
      // Nothing else, and nothing outside the trace.
      expect(spans.length).toBe(4 + queries.length);
    });

    it("arrives in both encodings: protobuf from the gateway, JSON from the pet service", () => {
      expect(new Set(spans.filter((s) => s.service === "gateway").map((s) => s.encoding))).toEqual(new Set(["protobuf"]));
      expect(new Set(spans.filter((s) => s.service === "pet-service").map((s) => s.encoding))).toEqual(new Set(["json"]));
      expect(receiver.contentTypes()).toEqual(expect.arrayContaining(["application/x-protobuf", "application/json"]));
    });

    it("carries no key, token or body in any span", () => {
      const exported = receiver.rawBodies().map((b) => b.toString("latin1")).join("\n");
      for (const secret of [stack.key, stack.key.split(".")[2]!, "Bearer", petName, idempotencyKey]) expect(exported).not.toContain(secret);
    });

    it("puts the request id, trace id and span id on both processes' log lines", async () => {
      // Lines are written in batches (lib/logger.ts): the spans may be in before them.
      await until("both processes' lines", () => logLine(stack.gateway.output(), requestId, "request") !== undefined && logLine(stack.pets.output(), requestId, "rpc") !== undefined);
      const server = one(spans, (s) => s.service === "gateway" && s.kind === SERVER, "the gateway's server span");
      const handler = one(spans, (s) => s.service === "pet-service" && s.kind === SERVER, "the pet service's server span");
      expect(logLine(stack.gateway.output(), requestId, "request")).toMatchObject({ requestId, traceId, spanId: server.spanId, status: 201 });
      expect(logLine(stack.pets.output(), requestId, "rpc")).toMatchObject({ requestId, traceId, spanId: handler.spanId, code: "OK" });
    });

    it("shows the trace as an exemplar of both processes' latency histograms in OpenMetrics, and in no Prometheus-format scrape", async () => {
      const accept = { Accept: "application/openmetrics-text; version=1.0.0" };
      const gatewayOpen = await (await fetch(`${stack.gateway.url}/metrics`, { headers: accept })).text();
      const petOpen = await (await fetch(`http://127.0.0.1:${stack.pets.metricsPort}/metrics`, { headers: accept })).text();
      const exemplar = new RegExp(`# \\{trace_id="${traceId}",span_id="[0-9a-f]{16}"\\} [0-9.e-]+ [0-9.]+$`);
      const withTrace = (text: string) => text.split("\n").filter((l) => exemplar.test(l)).map((l) => l.split("{")[0]);
      expect(withTrace(gatewayOpen)).toEqual(expect.arrayContaining(["gateway_http_request_duration_seconds_bucket", "gateway_grpc_client_duration_seconds_bucket"]));
      expect(withTrace(petOpen)).toEqual(expect.arrayContaining(["pet_service_grpc_server_duration_seconds_bucket", "pet_service_sqlite_query_duration_seconds_bucket"]));
      const gatewayText = await (await fetch(`${stack.gateway.url}/metrics`)).text();
      expect(gatewayText).not.toContain("trace_id");
      expect(gatewayText).toMatch(/^gateway_http_requests_total\{/m);
    });
  });

  it("ignores a malformed traceparent: a new trace, never an error", async () => {
    const requestId = `trace-malformed-${randomUUID()}`;
    expect((await listPets(stack, requestId, "00-NOT-A-TRACE-01")).status).toBe(200);
    const ofRequest = (service: string) => receiver.spans().some((s) => s.attributes["pet_store.request_id"] === requestId && s.service === service);
    await until("its spans from both processes", () => ofRequest("gateway") && ofRequest("pet-service"));
    const server = receiver.spans().find((s) => s.attributes["pet_store.request_id"] === requestId && s.service === "gateway")!;
    expect(server.parentSpanId).toBeUndefined();
    expect(receiver.spans().filter((s) => s.traceId === server.traceId).map((s) => s.service)).toEqual(expect.arrayContaining(["gateway", "pet-service"]));
  });

  it("exports nothing of an unsampled trace, yet passes its context to the pet service and logs its ids in both processes", async () => {
    const traceId = hex(16);
    const requestId = `trace-unsampled-${randomUUID()}`;
    expect((await listPets(stack, requestId, traceparent(traceId, hex(8), "00"))).status).toBe(200);
    // A sampled request after it: once its spans are in, the unsampled one's would have been too.
    const after = `trace-after-${randomUUID()}`;
    expect((await listPets(stack, after)).status).toBe(200);
    const ofAfter = (service: string) => receiver.spans().some((s) => s.attributes["pet_store.request_id"] === after && s.service === service);
    await until("the later request's spans from both processes", () => ofAfter("gateway") && ofAfter("pet-service"));
    expect(traceOf(traceId)).toEqual([]);
    const [gatewayLine, petLine] = await bothLines(stack, requestId);
    expect(gatewayLine).toMatchObject({ traceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(petLine).toMatchObject({ traceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(petLine.spanId).not.toBe(gatewayLine.spanId);
  });
});

describe("on PostgreSQL, called by an internal gRPC client", () => {
  let receiver: OtlpReceiver;
  let db: TestDatabase;
  let pets: SpawnedPetService;

  beforeAll(async () => {
    [receiver, db] = await Promise.all([startOtlpReceiver(), createTestDatabase()]);
    pets = await spawnPetService({ dbPath: db.url, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" } });
  }, 60_000);
  afterAll(async () => {
    await pets?.stop();
    await db?.drop();
    await receiver?.close();
  });

  it("continues the traceparent of the call's metadata and puts each query in a span of its own (db.system postgresql, the operation, never values)", async () => {
    const traceId = hex(16);
    const callerSpan = hex(8);
    const metadata = new grpc.Metadata();
    metadata.set("traceparent", traceparent(traceId, callerSpan, "01"));
    const client = petClient(pets.address);
    try {
      await client.create({ name: "Postgres pet", categoryId: "3", requestId: "pg-trace-1" }, { metadata });
      await client.list({ status: "PET_STATUS_AVAILABLE" }, { metadata });
    } finally {
      client.close();
    }
    await until("the calls' spans", () => receiver.spans().filter((s) => s.traceId === traceId && s.kind === SERVER).length === 2);
    await until("their queries", () => receiver.spans().filter((s) => s.traceId === traceId && s.kind === CLIENT).length >= 2);
    const spans = receiver.spans().filter((s) => s.traceId === traceId);
    const handlers = spans.filter((s) => s.kind === SERVER);
    expect(handlers.map((h) => [h.name, h.parentSpanId])).toEqual([
      ["petstore.v1.PetService/CreatePet", callerSpan],
      ["petstore.v1.PetService/ListPets", callerSpan],
    ]);
    const queries = spans.filter((s) => s.kind === CLIENT);
    expect(queries.map((q) => [q.name, q.attributes["pet_store.query"]])).toEqual([
      ["INSERT pets", "insert_pet_once"],
      ["SELECT pets", "list_pets_by_status"],
    ]);
    for (const query of queries) {
      expect(handlers.map((h) => h.spanId)).toContain(query.parentSpanId);
      expect(query.attributes).toMatchObject({ "db.system": "postgresql", "db.system.name": "postgresql", "db.collection.name": "pets" });
    }
    expect(receiver.rawBodies().map((b) => b.toString("latin1")).join("")).not.toContain("Postgres pet");
  });
});

describe("without an OTLP endpoint", () => {
  let stack: Stack;
  /** A receiver where an SDK sends by default (localhost:4318): nothing may arrive there either. */
  let defaultReceiver: OtlpReceiver | undefined;

  beforeAll(async () => {
    defaultReceiver = await startOtlpReceiver({ port: 4318 }).catch(() => undefined);
    stack = await startStack({}, {});
  }, 60_000);
  afterAll(async () => {
    await stopStack(stack);
    await defaultReceiver?.close();
  });

  it("exports nothing, and still continues the client's trace in both processes' logs", async ({ skip }) => {
    const traceId = hex(16);
    const clientSpanId = hex(8);
    const requestId = `trace-off-${randomUUID()}`;
    expect((await listPets(stack, requestId, traceparent(traceId, clientSpanId, "01"))).status).toBe(200);
    const lines = await bothLines(stack, requestId);
    for (const line of lines) expect(line).toMatchObject({ requestId, traceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/) });
    // Each process names its own work in the client's trace, never the client's span.
    const spanIds = new Set([clientSpanId, ...lines.map((line) => line.spanId)]);
    expect(spanIds.size).toBe(3);
    // A request that brings no trace gets no ids of its own (no backend would hold its trace): its
    // request id joins both processes' lines.
    const untraced = `trace-none-${randomUUID()}`;
    expect((await listPets(stack, untraced)).status).toBe(200);
    for (const line of await bothLines(stack, untraced)) {
      expect(line.requestId).toBe(untraced);
      expect(line).not.toHaveProperty("traceId");
    }
    expect(stack.gateway.output()).toContain('"tracesExported":false');
    expect(stack.pets.output()).toContain('"tracesExported":false');
    // The batch processor would have sent within its default 5 s; shut both down so anything queued is flushed now.
    await stopProcesses(stack);
    if (!defaultReceiver) {
      skip("127.0.0.1:4318 is in use here: the default endpoint could not be watched");
      return;
    }
    expect(defaultReceiver.contentTypes()).toEqual([]);
  });
});

describe("with OTEL_SDK_DISABLED=true", () => {
  let receiver: OtlpReceiver;
  let stack: Stack;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // An endpoint is set too: the flag wins over it, as the specification has it.
    const env = { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" };
    stack = await startStack(env, env);
  }, 60_000);
  afterAll(async () => {
    await stopStack(stack);
    await receiver?.close();
  });

  it("traces nothing: no span exported, no trace id on either process's lines, which keep their request id", async () => {
    const traceId = hex(16);
    const requestId = `sdk-disabled-${randomUUID()}`;
    expect((await listPets(stack, requestId, traceparent(traceId, hex(8), "01"))).status).toBe(200);
    for (const line of await bothLines(stack, requestId)) {
      expect(line.requestId).toBe(requestId);
      expect(line).not.toHaveProperty("traceId");
      expect(line).not.toHaveProperty("spanId");
    }
    expect(stack.gateway.output()).not.toContain(traceId);
    expect(stack.pets.output()).not.toContain(traceId);
    // Both shut down: a batch processor would flush what it held now.
    await stopProcesses(stack);
    expect(receiver.contentTypes()).toEqual([]);
  });
});
