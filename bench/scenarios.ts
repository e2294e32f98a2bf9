import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { startOtlpReceiver } from "../testkit/otlp-receiver.ts";
import { createTestDatabase } from "../testkit/postgres.ts";
import { createTestPki } from "../testkit/tls.ts";
import type { PrivateRedis } from "../testkit/redis-server.ts";
import { encodeRequest, grpcFrame, methodPath, type PetMethod } from "./grpc-frame.ts";
import { h2load, openLoop, wrk, type HttpTarget } from "./load.ts";
import type { Scenario } from "./scenario.ts";
import { CLIENT_CANDIDATES, clientScenarioKey, clientScenarios } from "./client-scenarios.ts";
import { log } from "./processes.ts";
import {
  rawCall,
  seedPets,
  startFixedGrpcServer,
  startFront,
  startGateway,
  startGoGateway,
  startPetService,
  startSqliteStack,
  tracedEnv,
  type Service,
} from "./stack.ts";

/**
 * The scenarios of `npm run bench`, each a load tool pointed at one front, with the processes
 * whose CPU it measures. Every process is started once; the scenarios share the one pet service.
 */


export interface ScenarioOptions {
  dir: string;
  keysDir: string;
  /** The Authorization header of a key that is never limited. */
  auth: Record<string, string>;
  redis: PrivateRedis;
  settings: { connections: number; seed: number; clientWarmupCalls: number };
  profileDir?: string;
  /** Only these scenario keys (the processes of the others are not started either). */
  only?: string[];
  /**
   * Another checkout (e.g. `git worktree add /tmp/base main`, with node_modules): its own pet
   * service and gateway run beside ours, as scenarios a@base and g@base, so a change is compared
   * with its base in alternating rounds of one run.
   */
  compareRoot?: string;
  /** Build and run grpc-gateway (Go) when Debian's packages are there (not in --smoke: the first build takes a minute). */
  goGateway: boolean;
  /** Rows with PostgreSQL (a private database) behind two pet-service replicas. */
  postgres: boolean;
  /** --smoke: the gRPC-client candidates only against the fixed-bytes server. */
  smoke: boolean;
}

export interface Scenarios {
  scenarios: Scenario[];
  /** The HTTP targets of (a) to (d), for the open-loop rows and the Redis command counts. */
  targets: Record<"a" | "b" | "c" | "d", HttpTarget>;
  /** Scenarios that could not run here, with the reason (shown under the table). */
  notMeasured: string[];
  /** Drops what the scenarios created outside their processes (the PostgreSQL database); after stopAll(). */
  cleanUp(): Promise<void>;
}

const LOG_LEVEL = "info";
/** The PostgreSQL server of the PostgreSQL rows (trust auth); each run creates a private database on it and drops it. */
const PG_SERVER = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432";
const NEW_PET = { name: "Bench pet", categoryId: 7, status: "pending" };
const CREATE_REQUEST = { name: NEW_PET.name, categoryId: String(NEW_PET.categoryId), status: "PET_STATUS_PENDING" };

export async function buildScenarios(opts: ScenarioOptions): Promise<Scenarios> {
  const { dir, keysDir, auth, redis, settings } = opts;
  const wanted = (key: string) => !opts.only || opts.only.includes(key);
  const loadOpts = (pids: Record<string, number>, durationSeconds: number) => ({ durationSeconds, connections: settings.connections, pids, dir });

  const pet = await startPetService({ dir, name: "pet-service", db: path.join(dir, "pets.sqlite"), logLevel: LOG_LEVEL, ...profile(opts) });
  const gateway = (name: string, redisUrl?: string) =>
    startGateway({ dir, name, petAddress: pet.address, keysDir, logLevel: LOG_LEVEL, ...(redisUrl && { redisUrl }), ...profile(opts) });
  const gwRedis = await gateway("gateway-redis", redis.url);
  const gwMemory = wanted("a-mem") || wanted("c-mem") ? await gateway("gateway-memory") : undefined;

  await seedPets(gwRedis.address, auth, settings.seed);
  const listed = await fetch(`${gwRedis.address}/v1/pets?limit=20`, { headers: auth });
  const body = await listed.text();
  if (listed.status !== 200) throw new Error(`GET /v1/pets?limit=20 answered ${listed.status}: ${body}`);
  const bodyFile = path.join(dir, "body.json");
  writeFileSync(bodyFile, body);

  const bare = await startFront(dir, "bare-express", "bench/bare-express.ts", { BARE_BODY_FILE: bodyFile }, "/v1/pets");
  const floor = (mode: string) =>
    startFront(dir, `floor-${mode}`, "bench/express-grpc-floor.ts", { FLOOR_MODE: mode, PET_SERVICE_ADDR: pet.address, FLOOR_BODY_FILE: bodyFile }, "/v1/pets?limit=20");
  const naive = wanted("e") ? await floor("naive") : undefined;
  const passThrough = wanted("f") ? await floor("pass-through") : undefined;
  for (const front of [bare, naive, passThrough]) {
    if (front && (await (await fetch(`${front.address}/v1/pets?limit=20`)).text()) !== body) {
      throw new Error(`${front.proc.name} does not answer the gateway's bytes`);
    }
  }

  const list = (s: Service): HttpTarget => ({ url: `${s.address}/v1/pets?limit=20`, headers: auth, status: 200 });
  const noop = (s: Service): HttpTarget => ({ url: `${s.address}/v1/bench-noop`, headers: auth, status: 404 });
  const create = (s: Service): HttpTarget => ({
    url: `${s.address}/v1/pets`,
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify(NEW_PET),
    status: 201,
  });
  const targets = { a: list(gwRedis), b: { url: `${bare.address}/v1/pets?limit=20`, status: 200 }, c: noop(gwRedis), d: create(gwRedis) };

  /**
   * The processes a scenario's requests go through: its front, and the pet service (`petService`,
   * ours unless --compare's) and Redis when they do.
   */
  const pids = (front: Service | undefined, uses: { pet: boolean; redis: boolean }, petService: Service = pet) => ({
    ...(front && { front: front.proc.pid }),
    ...(uses.pet && { pet: petService.proc.pid }),
    ...(uses.redis && { redis: redis.process.pid! }),
  });
  const http = (key: string, label: string, target: HttpTarget, front: Service, withRedis = false, viaPet = true, petService: Service = pet): Scenario => {
    const measured = pids(front, { pet: viaPet, redis: withRedis }, petService);
    return {
      key,
      label,
      pids: measured,
      run: (seconds) => wrk(target, loadOpts(measured, seconds)),
      atRate: (rate, seconds) => openLoop(target, rate, loadOpts(measured, seconds)),
    };
  };
  const grpcDirect = async (key: string, label: string, method: PetMethod, request: object, petService: Service = pet): Promise<Scenario> => {
    const frame = grpcFrame(await checkedRequest(petService.address, method, request));
    const measured = pids(undefined, { pet: true, redis: false }, petService);
    const url = `http://${petService.address}${methodPath(method)}`;
    return { key, label, pids: measured, run: (seconds) => h2load({ url, frame }, loadOpts(measured, seconds)) };
  };

  const all: (Scenario | undefined)[] = [
    http("a", "(a) full path: GET /v1/pets?limit=20 (auth, Redis quota, gRPC, SQLite; 20 pets)", targets.a, gwRedis, true),
    gwMemory && http("a-mem", "(a) full path at LOG_LEVEL=info, memory limiter (no Redis)", list(gwMemory), gwMemory),
    http("b", "(b) bare Express: GET /v1/pets, the same bytes", targets.b, bare, false, false),
    http("c", "(c) auth + limiter only: GET /v1/bench-noop → 404 after the guard (Redis)", targets.c, gwRedis, true, false),
    gwMemory && http("c-mem", "(c) auth + limiter only, memory limiter", noop(gwMemory), gwMemory, false, false),
    http("d", "(d) POST /v1/pets (a new pet each, committed and fsynced; Redis quota)", targets.d, gwRedis, true),
    naive && http("e", "(e) floor: naive Express handler calling grpc-js with proto-loader (no auth, limits or logs)", list(naive), naive),
    passThrough && http("f", "(f) floor: Express + one pass-through grpc-js call (fixed bytes both ways)", list(passThrough), passThrough),
    wanted("g") ? await grpcDirect("g", "(g) floor: the pet service alone, ListPets(limit=20) over gRPC (h2load)", "ListPets", { limit: 20 }) : undefined,
    wanted("h")
      ? await grpcDirect("h", "(h) the pet service alone, CreatePet over gRPC (h2load)", "CreatePet", CREATE_REQUEST)
      : undefined,
  ];
  if (opts.compareRoot && ["c-mem@base", "a@base", "a-mem@base", "g@base", "h@base"].some(wanted)) {
    const root = opts.compareRoot;
    const basePet = await startPetService({ dir, name: "pet-service-base", db: path.join(dir, "pets-base.sqlite"), logLevel: LOG_LEVEL, root, ...profile(opts) });
    const baseGateway = await startGateway({ dir, name: "gateway-base", petAddress: basePet.address, keysDir, logLevel: LOG_LEVEL, redisUrl: redis.url, root, ...profile(opts) });
    await seedPets(baseGateway.address, auth, settings.seed);
    const baseDirect = await grpcDirect("g@base", `(g) the pet service alone, ${root}`, "ListPets", { limit: 20 }, basePet);
    const baseMemory = await startGateway({ dir, name: "gateway-memory-base", petAddress: basePet.address, keysDir, logLevel: LOG_LEVEL, root, ...profile(opts) });
    all.push(
      http("c-mem@base", `(c) auth + limiter only, memory limiter, ${root}`, noop(baseMemory), baseMemory, false, false, basePet),
      http("a@base", `(a) full path, ${root}`, list(baseGateway), baseGateway, true, true, basePet),
      http("a-mem@base", `(a) full path, memory limiter, ${root}`, list(baseMemory), baseMemory, false, true, basePet),
      baseDirect,
      await grpcDirect("h@base", `(h) the pet service alone, CreatePet, ${root}`, "CreatePet", CREATE_REQUEST, basePet),
    );
  }
  const notMeasured: string[] = [];
  const clientKeys = CLIENT_CANDIDATES.map((c) => clientScenarioKey(c.client, "fixed"));
  let fixed: Service | undefined;
  if (wanted("k") || clientKeys.some(wanted)) {
    const request = encodeRequest("ListPets", { limit: 20 });
    const replyFile = path.join(dir, "list-reply.bin");
    writeFileSync(replyFile, await rawCall(pet.address, "ListPets", request));
    fixed = await startFixedGrpcServer(dir, replyFile, request);
    const measured = { pet: fixed.proc.pid };
    const url = `http://${fixed.address}${methodPath("ListPets")}`;
    const frame = grpcFrame(request);
    all.push({
      key: "k",
      label: "(k) floor: a grpc-js server answering ListPets with fixed bytes (h2load; no protobuf, SQLite or logs)",
      pids: measured,
      run: (seconds) => h2load({ url, frame }, loadOpts(measured, seconds)),
    });
  }
  all.push(
    ...clientScenarios(
      { ...(fixed && { fixed }), ...(!opts.smoke && { pet }) },
      { inFlight: settings.connections, warmupCalls: settings.clientWarmupCalls },
      wanted,
    ),
  );
  if (opts.goGateway && wanted("i")) {
    const go = await startGoGateway(dir, pet.address);
    if ("missing" in go) notMeasured.push(go.missing);
    else all.push(http("i", "(i) grpc-gateway (Go) in front of the same pet service: GET /v1/pets?limit=20, its own JSON, no auth or limits", list(go), go));
  }
  const cleanUps: (() => Promise<void>)[] = [];
  all.push(...(await hopVariants({ dir, keysDir, auth, settings, wanted, profile: profile(opts), cleanUps, http, list })));
  if (opts.postgres && (wanted("a-pg") || wanted("d-pg"))) {
    const database = await createTestDatabase(`${PG_SERVER}/postgres`).catch((err: unknown) => ({
      missing: `PostgreSQL rows need a server (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432); CREATE DATABASE at ${PG_SERVER} failed: ${err instanceof Error ? err.message : String(err)}`,
    }));
    if ("missing" in database) notMeasured.push(database.missing);
    else {
      cleanUps.push(database.drop);
      // One after the other: the first creates the schema.
      const replicas: Service[] = [];
      for (const i of [0, 1]) replicas.push(await startPetService({ dir, name: `pet-service-pg-${i}`, db: database.url, logLevel: LOG_LEVEL, ...profile(opts) }));
      const front = await startGateway({
        dir,
        name: "gateway-pg",
        petAddress: `ipv4:${replicas.map((r) => r.address).join(",")}`,
        keysDir,
        logLevel: LOG_LEVEL,
        redisUrl: redis.url,
        ...profile(opts),
      });
      await seedPets(front.address, auth, settings.seed);
      const measured = { front: front.proc.pid, "pet:0": replicas[0]!.proc.pid, "pet:1": replicas[1]!.proc.pid, redis: redis.process.pid! };
      // PostgreSQL's backends for the replicas' pooled connections, as they are when the run starts.
      const backendPids = async () =>
        (await database.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database.name])).map((r) => r.pid);
      const withBackends = async () => ({ ...measured, ...Object.fromEntries((await backendPids()).map((pid) => [`postgres:${pid}`, pid])) });
      const row = (key: string, label: string, target: HttpTarget): Scenario => ({
        key,
        label,
        pids: measured,
        run: async (seconds) => wrk(target, loadOpts(await withBackends(), seconds)),
      });
      all.push(
        row("a-pg", "(a) full path, PostgreSQL behind two pet-service replicas (round robin; CPU of both replicas added up; PostgreSQL's backends in the last column)", list(front)),
        row("d-pg", "(d) POST /v1/pets, PostgreSQL behind two pet-service replicas", create(front)),
      );
    }
  }
  const scenarios = all.filter((s): s is Scenario => s !== undefined && wanted(s.key));
  log(`scenarios: ${scenarios.map((s) => s.key).join(", ")}`);
  return { scenarios, targets, notMeasured, cleanUp: async () => void (await Promise.all(cleanUps.map((c) => c()))) };
}

/**
 * The full path, memory limiter, with tracing on (OTLP/HTTP protobuf to a sink in this process,
 * which answers without decoding) at a 1 % and a 100 % sampler, unset (the default) and disabled
 * altogether, and with mTLS on the hop (certificates made with openssl): each its own pet service
 * and gateway.
 */
async function hopVariants(o: {
  dir: string;
  keysDir: string;
  auth: Record<string, string>;
  settings: { seed: number };
  wanted: (key: string) => boolean;
  profile: { profileDir?: string };
  cleanUps: (() => Promise<void>)[];
  http: (key: string, label: string, target: HttpTarget, front: Service, withRedis: boolean, viaPet: boolean, petService: Service) => Scenario;
  list: (s: Service) => HttpTarget;
}): Promise<Scenario[]> {
  const variant = (name: string, petEnv: Record<string, string>, gatewayEnv: Record<string, string>, credentials?: grpc.ChannelCredentials) =>
    startSqliteStack({ dir: o.dir, keysDir: o.keysDir, name, auth: o.auth, seed: o.settings.seed, logLevel: LOG_LEVEL, petEnv, gatewayEnv, ...(credentials && { credentials }), ...o.profile });
  const row = (key: string, label: string, { front, pet }: { front: Service; pet: Service }) => o.http(key, label, o.list(front), front, false, true, pet);
  const scenarios: Scenario[] = [];
  if (o.wanted("a-otel1") || o.wanted("a-otel100")) {
    const sink = await startOtlpReceiver({ decode: false });
    o.cleanUps.push(() => sink.close());
    const traced = (ratio: string) => tracedEnv(sink.url, ratio);
    if (o.wanted("a-otel1")) {
      scenarios.push(row("a-otel1", "(a) full path, memory limiter, tracing on: OTLP/HTTP protobuf to a local sink, 1 % of requests sampled", await variant("otel1", traced("0.01"), traced("0.01"))));
    }
    if (o.wanted("a-otel100")) {
      scenarios.push(row("a-otel100", "(a) full path, memory limiter, tracing on: every request sampled and exported (100 %)", await variant("otel100", traced("1"), traced("1"))));
    }
  }
  // Tracing unset and disabled, built as the rows above are: the four differ in their OTEL_* alone.
  if (o.wanted("a-unset")) {
    scenarios.push(row("a-unset", "(a) full path, memory limiter, tracing unset (no endpoint, the default: a client's traceparent continued; wrk sends none)", await variant("unset", {}, {})));
  }
  if (o.wanted("a-notrace")) {
    const off = { OTEL_SDK_DISABLED: "true" };
    scenarios.push(row("a-notrace", "(a) full path, memory limiter, tracing disabled (OTEL_SDK_DISABLED=true: no ids, no propagation, as before tracing)", await variant("notrace", off, off)));
  }
  if (o.wanted("a-tls")) {
    const pki = await createTestPki();
    o.cleanUps.push(() => pki.remove());
    const ca = await pki.ca("bench-ca");
    const [server, client] = await Promise.all([ca.issue("pet-service"), ca.issue("gateway")]);
    const stack = await variant(
      "tls",
      { PET_SERVICE_TLS_CERT: server.cert, PET_SERVICE_TLS_KEY: server.key, PET_SERVICE_TLS_CLIENT_CA: ca.cert },
      { PET_SERVICE_TLS_CA: ca.cert, PET_SERVICE_TLS_CLIENT_CERT: client.cert, PET_SERVICE_TLS_CLIENT_KEY: client.key },
      grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(client.key), readFileSync(client.cert)),
    );
    scenarios.push(row("a-tls", "(a) full path, memory limiter, mTLS on the gateway → pet service hop (client certificates, TLS 1.3)", stack));
  }
  return scenarios;
}

const profile = (opts: ScenarioOptions) => (opts.profileDir ? { profileDir: opts.profileDir } : {});

/** The encoded request, after checking that the pet service answers it with OK (h2load sees HTTP statuses only). */
async function checkedRequest(address: string, method: PetMethod, request: object): Promise<Buffer> {
  const bytes = encodeRequest(method, request);
  await rawCall(address, method, bytes);
  return bytes;
}
