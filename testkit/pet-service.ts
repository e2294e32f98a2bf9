import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { openSqlite } from "../lib/sqlite.ts";
import { service as healthService } from "grpc-health-check";
import { createLogger } from "../lib/logger.ts";
import { loadPetStorePackage } from "../proto/load.ts";
import type { CreatePetRequestInit, ListPetsRequestInit, ListPetsResponse, Pet } from "../proto/generated/petstore-v1.ts";
import type { PetServiceMetrics } from "../pet-service/metrics.ts";
import { createServer } from "../pet-service/server.ts";
import { SqlitePetStore } from "../pet-service/store/sqlite/store.ts";
import { afterAll, beforeAll } from "vitest";
import { exitWithin, launchNode, type Ended, type Exit, type Launched } from "./process.ts";
import { until } from "./until.ts";

const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 12_000;

export interface RunningPetService {
  /** "127.0.0.1:PORT" */
  address: string;
  port: number;
  /** PETS_DB: the SQLite file, or the PostgreSQL URL it was given. */
  dbPath: string;
  stop(): Promise<void>;
}

export interface SpawnedPetService extends RunningPetService {
  child: ChildProcess;
  /** The HTTP port of /metrics and /healthz when METRICS_PORT was set (METRICS_PORT=0 picks a free one). */
  metricsPort?: number;
  /** Sends the signal (SIGTERM by default), waits for the exit; the exit code, null when killed by a signal. */
  kill(signal?: NodeJS.Signals): Promise<number | null>;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
}

/** A SQLite path in a fresh directory under os.tmpdir(), or the given one (then never removed). */
export async function testDbPath(dbPath?: string): Promise<{ dbPath: string; remove(): Promise<void> }> {
  if (dbPath) return { dbPath, remove: async () => {} };
  const dir = await mkdtemp(path.join(os.tmpdir(), "pet-service-test-"));
  return { dbPath: path.join(dir, "pets.sqlite"), remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * The pet service in this process (createServer on a free loopback port, a real SQLite file);
 * `metrics` (createPetServiceMetrics()) is handed to the store and the server, as main does;
 * `clock` ages idempotency keys (tests move it instead of sleeping).
 */
export async function startPetService(
  opts: { dbPath?: string; metrics?: PetServiceMetrics; clock?: () => number } = {},
): Promise<RunningPetService> {
  const db = await testDbPath(opts.dbPath);
  const { metrics, clock } = opts;
  const store = await SqlitePetStore.open(db.dbPath, { metrics });
  const pet = createServer({ store, metrics, clock, logger: createLogger("pet-service", process.env.LOG_LEVEL ?? "silent") });
  const port = await pet.listen("127.0.0.1", 0);
  return {
    address: `127.0.0.1:${port}`,
    port,
    dbPath: db.dbPath,
    async stop() {
      await pet.shutdown();
      await store.close();
      await db.remove();
    },
  };
}

/**
 * The pet service as a real process, ready once grpc.health.v1 says SERVING: `node
 * pet-service/main.ts`, one process, so a SIGKILL hits the server itself.
 */
export async function spawnPetService(
  /**
   * `credentials`: how the readiness check reaches it (TLS when PET_SERVICE_TLS_* are in `env`).
   * `stdout`: a descriptor for its stdout (testkit/output-faults.ts) instead of a pipe this process
   * reads; then `port` is needed, as there is no listening line to read it from.
   */
  opts: { dbPath?: string; port?: number; env?: Record<string, string>; credentials?: grpc.ChannelCredentials; stdout?: number } = {},
): Promise<SpawnedPetService> {
  // PETS_DB: the given SQLite file or PostgreSQL URL (the caller's, never removed), or a fresh temporary SQLite file.
  const db = await testDbPath(opts.dbPath);
  const launched = launch({ PET_SERVICE_PORT: String(opts.port ?? 0), PETS_DB: db.dbPath, ...opts.env }, opts.stdout);
  const { child, output, exited } = launched;
  const kill = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return (await exited).code;
  };
  try {
    const { port, metricsPort } = opts.stdout === undefined ? await listeningLine(launched) : { port: opts.port!, metricsPort: undefined };
    const address = `127.0.0.1:${port}`;
    await waitUntilServing(address, launched, opts.credentials);
    return {
      child,
      address,
      port,
      ...(metricsPort !== undefined && { metricsPort }),
      dbPath: db.dbPath,
      kill,
      output,
      async stop() {
        const forced = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
        await kill("SIGTERM");
        clearTimeout(forced);
        await db.remove();
      },
    };
  } catch (err) {
    await kill("SIGKILL");
    await db.remove();
    throw err;
  }
}

/**
 * Runs the pet service until it exits by itself (start-up failures): its exit code and output.
 * PETS_DB defaults to a temporary file, so a run never touches the repository's data/.
 */
export async function runPetServiceToExit(env: Record<string, string>): Promise<Exit> {
  const db = await testDbPath();
  const { child, exited } = launch({ PETS_DB: db.dbPath, ...env });
  const forced = setTimeout(() => child.kill("SIGKILL"), START_TIMEOUT_MS);
  const result = await exited;
  clearTimeout(forced);
  await db.remove();
  return result;
}

function launch(env: Record<string, string>, stdout?: number): Launched {
  // The listening line (info) is how the helper learns the port.
  return launchNode("pet-service/main.ts", { PET_SERVICE_HOST: "127.0.0.1", LOG_LEVEL: "info", ...env }, [], stdout === undefined ? {} : { stdout });
}

/** The ports from the "pet-service listening" log line (PET_SERVICE_PORT=0 / METRICS_PORT=0 pick free ones). */
function listeningLine({ child, output, exited }: Launched): Promise<{ port: number; metricsPort?: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pet-service did not listen in time:\n${output()}`)), START_TIMEOUT_MS);
    const onData = () => {
      const line = output()
        .split("\n")
        .slice(0, -1) // complete lines only
        .find((l) => l.includes('"pet-service listening"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      resolve(JSON.parse(line) as { port: number; metricsPort?: number });
    };
    child.stdout!.on("data", onData);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`pet-service exited with code ${code} before listening:\n${output()}`));
    });
  });
}

async function waitUntilServing(address: string, { child, output }: Launched, credentials?: grpc.ChannelCredentials): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (child.exitCode === null && Date.now() < deadline) {
    if ((await checkHealth(address, "", { timeoutMs: 2_000, ...(credentials && { credentials }) }).catch(() => undefined)) === "SERVING") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`pet-service at ${address} did not report SERVING:\n${output()}`);
}

/** A grpc.health.v1.Health client constructor (Check, Watch, List). */
export const HealthClient = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, "grpc.health.v1.Health");

/**
 * The tests' grpc-js clients reach the pet service at 127.0.0.1:port. Node 26 refuses an IP
 * address as a TLS server name (RFC 6066; Node's DEP0123 reached its end of life), which grpc-js
 * would send for such a target: over TLS they name the server "localhost", as every test
 * certificate does (testkit/tls.ts). Plaintext channels ignore it.
 */
const CLIENT_OPTIONS: grpc.ChannelOptions = { "grpc.ssl_target_name_override": "localhost" };

/** grpc.health.v1.Health/Check: "SERVING", "NOT_SERVING", …; rejects with the gRPC error (NOT_FOUND for unknown services). */
export async function checkHealth(
  address: string,
  service = "",
  opts: CallOpts & { credentials?: grpc.ChannelCredentials } = { timeoutMs: 2_000 },
): Promise<string> {
  const client = new HealthClient(address, opts.credentials ?? grpc.credentials.createInsecure(), CLIENT_OPTIONS);
  try {
    return (await unary<{ status: string }>(client, "Check", { service }, opts)).status;
  } finally {
    client.close();
  }
}

type ServiceClient = InstanceType<grpc.ServiceClientConstructor>;

export interface CallOpts {
  metadata?: grpc.Metadata;
  timeoutMs?: number;
}

/** A PetService client from proto/load.ts with promise helpers; errors are grpc.ServiceError. */
export type PetClient = ServiceClient & {
  create(request: CreatePetRequestInit, opts?: CallOpts): Promise<Pet>;
  list(request?: ListPetsRequestInit, opts?: CallOpts): Promise<Pet[]>;
  /** ListPets with its next_page_token. */
  page(request?: ListPetsRequestInit, opts?: CallOpts): Promise<ListPetsResponse>;
  /** `id` undefined sends a request with the field unset. */
  get(id: string | undefined, opts?: CallOpts): Promise<Pet>;
};

/** `credentials`: plaintext unless given (TLS, mTLS). */
export function petClient(address: string, credentials = grpc.credentials.createInsecure()): PetClient {
  const { PetService } = loadPetStorePackage();
  const client = new PetService(address, credentials, CLIENT_OPTIONS);
  return Object.assign(client, {
    create: async (request: CreatePetRequestInit, opts?: CallOpts) =>
      (await unary<{ pet: Pet }>(client, "CreatePet", request, opts)).pet,
    list: async (request: ListPetsRequestInit = {}, opts?: CallOpts) =>
      (await unary<{ pets: Pet[] }>(client, "ListPets", request, opts)).pets,
    page: (request: ListPetsRequestInit = {}, opts?: CallOpts) => unary<ListPetsResponse>(client, "ListPets", request, opts),
    get: async (id: string | undefined, opts?: CallOpts) => (await unary<{ pet: Pet }>(client, "GetPet", { id }, opts)).pet,
  });
}

function unary<Res>(
  client: ServiceClient,
  method: string,
  request: unknown,
  { metadata = new grpc.Metadata(), timeoutMs = 5_000 }: CallOpts = {},
): Promise<Res> {
  return new Promise((resolve, reject) =>
    client[method]!.call(
      client,
      request,
      metadata,
      { deadline: Date.now() + timeoutMs },
      (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)),
    ),
  );
}

type SqlParam = string | number | bigint | null | Uint8Array;

/** A second, independent connection to a pet-service database, for tests that reach around the API. */
export async function sideConnection(
  dbPath: string,
): Promise<{ exec(sql: string): Promise<void>; all<T>(sql: string, params?: unknown[]): Promise<T[]>; close(): Promise<void> }> {
  // The service's own driver (one SQLite library per process), with its busy timeout.
  const db = openSqlite(dbPath);
  return {
    exec: async (sql) => db.exec(sql),
    all: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).all(...(params as SqlParam[])) as T[],
    close: async () => db.close(),
  };
}

/** The gRPC error a call failed with (fails the test when the call succeeds). */
export async function rejection(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: grpc.ServiceError) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected the call to fail, got ${JSON.stringify(outcome.value)}`);
  return outcome.error;
}

/** One fresh service (own SQLite file) and a client for the enclosing describe block, so counts and orders are its own. */
export function freshService(): { service: () => RunningPetService; client: () => PetClient } {
  let service: RunningPetService;
  let client: PetClient;
  beforeAll(async () => {
    service = await startPetService();
    client = petClient(service.address);
  });
  afterAll(async () => {
    client?.close();
    await service?.stop();
  });
  return { service: () => service, client: () => client };
}

/**
 * SIGTERM while a create is held in flight (another connection holds SQLite's write lock); once the
 * drain has begun, `whileDraining` (what happens to the process's stdout, say), then the lock is
 * released; once the create is answered, `afterAnswer`. The create's answer, and how the process
 * ended if it did within `deadlineMs` of the signal (exitWithin).
 */
export async function stopWhileCallHeld(
  service: SpawnedPetService,
  client: PetClient,
  { whileDraining, afterAnswer, deadlineMs }: { whileDraining?: () => Promise<void>; afterAnswer?: () => Promise<void>; deadlineMs: number },
): Promise<{ answer: Pet; ended: Ended }> {
  const lock = await sideConnection(service.dbPath);
  await lock.exec("BEGIN IMMEDIATE");
  const held = client.create({ name: "held open", categoryId: "1" }, { timeoutMs: 15_000 });
  // Answered without storage, on the same connection after the create: once it is back, the create is in the server.
  await rejection(client.list({ limit: 101 }));

  const ended = exitWithin(service.child, deadlineMs);
  service.child.kill("SIGTERM");
  await until("the drain has begun", async () => (await checkHealth(service.address, "", { timeoutMs: 1_000 }).catch(() => "gone")) !== "SERVING");
  await whileDraining?.();
  await lock.exec("COMMIT");
  await lock.close();
  const answer = await held;
  await afterAnswer?.();
  return { answer, ended: await ended };
}
