import { writeFileSync } from "node:fs";
import path from "node:path";
import { encodeRequest, grpcFrame, methodPath } from "./grpc-frame.ts";
import { h2load, type HttpTarget } from "./load.ts";
import type { Scenario } from "./scenario.ts";
import { CLIENT_CANDIDATES, clientScenarioKey, clientScenarios } from "./client-scenarios.ts";
import { hopScenarios } from "./hop-scenarios.ts";
import { postgresScenarios } from "./postgres-scenarios.ts";
import { log } from "./processes.ts";
import { createKit, LOG_LEVEL, NEW_PET, type KitOptions, type ScenarioKit } from "./scenario-kit.ts";
import { rawCall, seedPets, startFixedGrpcServer, startFront, startGateway, startGoGateway, startPetService, type Service } from "./stack.ts";

/**
 * The scenarios of `npm run bench`, each a load tool pointed at one front, with the processes
 * whose CPU it measures. Every process is started once; the scenarios share the one pet service.
 * The tracing and TLS rows (hop-scenarios.ts) and the PostgreSQL rows (postgres-scenarios.ts) run
 * stacks of their own.
 */

export interface ScenarioOptions extends KitOptions {
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

const CREATE_REQUEST = { name: NEW_PET.name, categoryId: String(NEW_PET.categoryId), status: "PET_STATUS_PENDING" };

export async function buildScenarios(opts: ScenarioOptions): Promise<Scenarios> {
  const { dir, keyService, auth, redis, settings } = opts;
  const pet = await startPetService({ dir, name: "pet-service", db: path.join(dir, "pets.sqlite"), logLevel: LOG_LEVEL, ...(opts.profileDir && { profileDir: opts.profileDir }) });
  const kit = createKit(opts, pet);
  const { wanted, http, list, noop, grpcDirect } = kit;
  const gateway = (name: string, redisUrl?: string, env?: Record<string, string>) =>
    startGateway({ dir, name, petAddress: pet.address, keys: keyService.gatewayEnv, logLevel: LOG_LEVEL, ...(redisUrl && { redisUrl }), ...(env && { env }), ...kit.profile });
  const gwRedis = await gateway("gateway-redis", redis.url);
  // The gateway as it was before the usage history: what counting and reporting cost, in the same rounds.
  const gwNoUsage = wanted("a-no-usage") ? await gateway("gateway-redis-no-usage", redis.url, { USAGE_REPORTING: "off" }) : undefined;
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

  const targets = { a: list(gwRedis), b: { url: `${bare.address}/v1/pets?limit=20`, status: 200 }, c: noop(gwRedis), d: kit.create(gwRedis) };
  const all: (Scenario | undefined)[] = [
    http("a", "(a) full path: GET /v1/pets?limit=20 (auth, Redis quota, gRPC, SQLite; 20 pets; usage counted and reported)", targets.a, gwRedis, true),
    gwNoUsage && http("a-no-usage", "(a) full path with usage reporting off (USAGE_REPORTING=off: no counting, no reports), beside (a) with it on", list(gwNoUsage), gwNoUsage, true),
    http("a-scoped", "(a) full path with a key that has scopes (pets:read) and allowed networks (3 CIDRs): both checked on every request", { ...targets.a, headers: opts.scopedAuth }, gwRedis, true),
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
  if (opts.compareRoot && ["c-mem@base", "a@base", "a-mem@base", "g@base", "h@base"].some(wanted)) all.push(...(await baseScenarios(kit, opts.compareRoot)));
  all.push(...(await fixedBytesScenarios(kit, opts.smoke)));
  if (opts.goGateway && wanted("i")) {
    const go = await startGoGateway(dir, pet.address);
    if ("missing" in go) kit.notMeasured.push(go.missing);
    else all.push(http("i", "(i) grpc-gateway (Go) in front of the same pet service: GET /v1/pets?limit=20, its own JSON, no auth or limits", list(go), go));
  }
  all.push(...(await hopScenarios(kit)));
  if (opts.postgres) all.push(...(await postgresScenarios(kit)));
  const scenarios = all.filter((s): s is Scenario => s !== undefined && wanted(s.key));
  log(`scenarios: ${scenarios.map((s) => s.key).join(", ")}`);
  return { scenarios, targets, notMeasured: kit.notMeasured, cleanUp: async () => void (await Promise.all(kit.cleanUps.map((c) => c()))) };
}

/** --compare: another checkout's pet service and gateways (Redis and memory limiter) beside ours. */
async function baseScenarios(kit: ScenarioKit, root: string): Promise<Scenario[]> {
  const { dir, keyService, redis, http, list, noop } = kit;
  // A checkout from before the key service reads the public keys from KEYS_DIR.
  const keys = { ...keyService.gatewayEnv, KEYS_DIR: keyService.keysDir };
  const basePet = await startPetService({ dir, name: "pet-service-base", db: path.join(dir, "pets-base.sqlite"), logLevel: LOG_LEVEL, root, ...kit.profile });
  const baseGateway = await startGateway({ dir, name: "gateway-base", petAddress: basePet.address, keys, logLevel: LOG_LEVEL, redisUrl: redis.url, root, ...kit.profile });
  await seedPets(baseGateway.address, kit.auth, kit.settings.seed);
  const baseDirect = await kit.grpcDirect("g@base", `(g) the pet service alone, ${root}`, "ListPets", { limit: 20 }, basePet);
  const baseMemory = await startGateway({ dir, name: "gateway-memory-base", petAddress: basePet.address, keys, logLevel: LOG_LEVEL, root, ...kit.profile });
  return [
    http("c-mem@base", `(c) auth + limiter only, memory limiter, ${root}`, noop(baseMemory), baseMemory, false, false, basePet),
    http("a@base", `(a) full path, ${root}`, list(baseGateway), baseGateway, true, true, basePet),
    http("a-mem@base", `(a) full path, memory limiter, ${root}`, list(baseMemory), baseMemory, false, true, basePet),
    baseDirect,
    await kit.grpcDirect("h@base", `(h) the pet service alone, CreatePet, ${root}`, "CreatePet", CREATE_REQUEST, basePet),
  ];
}

/**
 * (k), a grpc-js server answering ListPets with the pet service's own reply bytes, and the
 * gRPC-client candidates against it (and, but in --smoke, against the pet service).
 */
async function fixedBytesScenarios(kit: ScenarioKit, smoke: boolean): Promise<Scenario[]> {
  const { dir, pet, settings, wanted } = kit;
  const scenarios: Scenario[] = [];
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
    scenarios.push({
      key: "k",
      label: "(k) floor: a grpc-js server answering ListPets with fixed bytes (h2load; no protobuf, SQLite or logs)",
      pids: measured,
      run: (seconds) => h2load({ url, frame }, kit.loadOpts(measured, seconds)),
    });
  }
  scenarios.push(
    ...clientScenarios({ ...(fixed && { fixed }), ...(!smoke && { pet }) }, { inFlight: settings.connections, warmupCalls: settings.clientWarmupCalls }, wanted),
  );
  return scenarios;
}
