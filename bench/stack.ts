import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { checkHealth } from "../testkit/pet-service.ts";
import { freePort } from "../testkit/net.ts";
import { methodPath, type PetMethod } from "./grpc-frame.ts";
import { ROOT, spawnNode, spawnProcess, waitFor, type Proc } from "./processes.ts";

/** The processes under test: pet services, gateways and the Express fronts of the floors. */

export interface Service {
  proc: Proc;
  /** host:port (gRPC) or http://host:port (HTTP). */
  address: string;
}

/** Tracing on, both processes exporting to `sinkUrl` (an OTLP receiver), sampling `ratio` of new traces. */
export const tracedEnv = (sinkUrl: string, ratio: string): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: ratio,
});

/** `--cpu-prof` into profileDir/name when profiling. */
const profileArgs = (profileDir: string | undefined, name: string): string[] =>
  profileDir ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(profileDir, name)] : [];

export interface PetServiceOptions {
  dir: string;
  name: string;
  /** PETS_DB: a SQLite file or a postgres:// URL. */
  db: string;
  logLevel: string;
  profileDir?: string;
  /** Another checkout to run the service from (--compare); this one by default. */
  root?: string;
  /** More variables (OTEL_*, PET_SERVICE_TLS_*). */
  env?: Record<string, string>;
  /** How the start-up health check reaches it (TLS when `env` turns it on). */
  credentials?: grpc.ChannelCredentials;
}

export async function startPetService(opts: PetServiceOptions): Promise<Service> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const proc = spawnNode(
    opts.name,
    "pet-service/main.ts",
    { PET_SERVICE_HOST: "127.0.0.1", PET_SERVICE_PORT: String(port), PETS_DB: opts.db, LOG_LEVEL: opts.logLevel, ...opts.env },
    opts.dir,
    profileArgs(opts.profileDir, opts.name),
    opts.root,
  );
  const health = { timeoutMs: 500, ...(opts.credentials && { credentials: opts.credentials }) };
  await waitFor(proc, "grpc health SERVING", async () => (await checkHealth(address, "", health)) === "SERVING");
  return { proc, address };
}

export interface GatewayOptions {
  dir: string;
  name: string;
  /** PET_SERVICE_ADDR */
  petAddress: string;
  /** Unset: the in-memory limiter. */
  redisUrl?: string;
  /** The key service it follows: KEYS_URL, KEYS_SERVICE_TOKEN (bench/key-service.ts's gatewayEnv). */
  keys: Record<string, string>;
  logLevel: string;
  profileDir?: string;
  /** Another checkout to run the gateway from (--compare); this one by default. */
  root?: string;
  /** More variables (OTEL_*, PET_SERVICE_TLS_*). */
  env?: Record<string, string>;
}

export async function startGateway(opts: GatewayOptions): Promise<Service> {
  const port = await freePort();
  const address = `http://127.0.0.1:${port}`;
  const proc = spawnNode(
    opts.name,
    "gateway/main.ts",
    {
      GATEWAY_HOST: "127.0.0.1",
      GATEWAY_PORT: String(port),
      PET_SERVICE_ADDR: opts.petAddress,
      ...(opts.redisUrl && { REDIS_URL: opts.redisUrl }),
      ...opts.keys,
      LOG_LEVEL: opts.logLevel,
      ...opts.env,
    },
    opts.dir,
    profileArgs(opts.profileDir, opts.name),
    opts.root,
  );
  await waitFor(proc, "/readyz 200", async () => (await fetch(`${address}/readyz`)).status === 200);
  return { proc, address };
}

/** A bench/ Express app (bare Express or a floor) on a free port, ready once `probePath` answers 200. */
export async function startFront(dir: string, name: string, script: string, env: Record<string, string>, probePath: string): Promise<Service> {
  const port = await freePort();
  const address = `http://127.0.0.1:${port}`;
  const proc = spawnNode(name, script, { ...env, BARE_PORT: String(port), FLOOR_PORT: String(port) }, dir);
  await waitFor(proc, "listening", async () => (await fetch(`${address}${probePath}`)).status === 200);
  return { proc, address };
}

/** `count` pets through the gateway (statuses in turn), as a client would create them. */
export async function seedPets(gatewayUrl: string, headers: Record<string, string>, count: number): Promise<void> {
  const statuses = ["available", "pending", "sold"];
  for (let i = 1; i <= count; i++) {
    const res = await fetch(`${gatewayUrl}/v1/pets`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ name: `Seed pet ${i}`, categoryId: 1 + (i % 4), status: statuses[i % 3] }),
    });
    if (res.status !== 201) throw new Error(`seeding: POST /v1/pets answered ${res.status}: ${await res.text()}`);
  }
}

/**
 * A pet service on its own SQLite file and a gateway (memory limiter) in front of it, named
 * `pet-service-<name>` and `gateway-<name>`, with `seed` pets created through the gateway.
 */
export async function startSqliteStack(o: {
  dir: string;
  keys: Record<string, string>;
  name: string;
  auth: Record<string, string>;
  seed: number;
  logLevel: string;
  petEnv: Record<string, string>;
  gatewayEnv: Record<string, string>;
  credentials?: grpc.ChannelCredentials;
  profileDir?: string;
}): Promise<{ pet: Service; front: Service }> {
  const { dir, name, logLevel, profileDir } = o;
  const pet = await startPetService({ dir, name: `pet-service-${name}`, db: path.join(dir, `pets-${name}.sqlite`), logLevel, env: o.petEnv, ...(o.credentials && { credentials: o.credentials }), ...(profileDir && { profileDir }) });
  const front = await startGateway({ dir, name: `gateway-${name}`, petAddress: pet.address, keys: o.keys, logLevel, env: o.gatewayEnv, ...(profileDir && { profileDir }) });
  await seedPets(front.address, o.auth, o.seed);
  return { pet, front };
}

/** One unary call with fixed request bytes; resolves with the reply's bytes (rejects on any gRPC error). */
export async function rawCall(address: string, method: PetMethod, request: Buffer): Promise<Buffer> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const same = (b: Buffer) => b;
  try {
    return await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest(methodPath(method), same, same, request, { deadline: Date.now() + 5_000 }, (err, reply) =>
        err ? reject(err) : resolve(reply!),
      ),
    );
  } finally {
    client.close();
  }
}

/** bench/grpc-fixed-server.ts answering ListPets with `replyFile`'s bytes. */
export async function startFixedGrpcServer(dir: string, replyFile: string, request: Buffer): Promise<Service> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const proc = spawnNode("grpc-fixed-server", "bench/grpc-fixed-server.ts", { FIXED_PORT: String(port), FIXED_RESPONSE_FILE: replyFile }, dir);
  await waitFor(proc, "a ListPets reply", async () => (await rawCall(address, "ListPets", request)).length > 0);
  return { proc, address };
}

const GO_GATEWAY_TOOLS = ["go", "protoc", "protoc-gen-go", "protoc-gen-grpc-gateway"];
const GO_GATEWAY_SOURCES = "/usr/share/gocode/src/github.com/grpc-ecosystem/grpc-gateway/runtime";
const GO_GATEWAY_PACKAGES =
  "golang-go protobuf-compiler golang-goprotobuf-dev golang-grpc-gateway golang-github-grpc-ecosystem-grpc-gateway-dev golang-google-grpc-dev golang-google-genproto-dev";

const onPath = (tool: string) => (process.env.PATH ?? "").split(path.delimiter).some((d) => d && existsSync(path.join(d, tool)));

/**
 * grpc-gateway (Go) in front of the pet service, built by bench/grpc-gateway/build.sh from Debian's
 * packages; undefined (with the reason) when they are not installed.
 */
export async function startGoGateway(dir: string, petAddress: string): Promise<Service | { missing: string }> {
  const absent = GO_GATEWAY_TOOLS.filter((t) => !onPath(t));
  if (absent.length || !existsSync(GO_GATEWAY_SOURCES)) {
    return { missing: `grpc-gateway (Go) needs ${absent.length ? absent.join(", ") : GO_GATEWAY_SOURCES}: apt-get install -y ${GO_GATEWAY_PACKAGES}` };
  }
  let binary: string;
  try {
    binary = execFileSync(path.join(ROOT, "bench/grpc-gateway/build.sh"), [path.join(os.tmpdir(), "petstore-grpc-gateway")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? err).trim().split("\n").slice(-3).join(" ");
    return { missing: `grpc-gateway (Go) did not build (bench/grpc-gateway/build.sh): ${stderr}` };
  }
  const port = await freePort();
  const address = `http://127.0.0.1:${port}`;
  const proc = spawnProcess("grpc-gateway", binary, [], { PET_SERVICE_ADDR: petAddress, GW_LISTEN: `127.0.0.1:${port}` }, dir);
  await waitFor(proc, "GET /v1/pets 200", async () => (await fetch(`${address}/v1/pets?limit=20`)).status === 200);
  return { proc, address };
}
