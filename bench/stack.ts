import path from "node:path";
import { checkHealth } from "../tests/helpers/pet-service.js";
import { freePort } from "../tests/helpers/net.js";
import { spawnNode, waitFor, type Proc } from "./processes.js";

/** The processes under test: pet services, gateways and the Express fronts of the floors. */

export interface Service {
  proc: Proc;
  /** host:port (gRPC) or http://host:port (HTTP). */
  address: string;
}

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
}

export async function startPetService(opts: PetServiceOptions): Promise<Service> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const proc = spawnNode(
    opts.name,
    "pet-service/main.ts",
    { PET_SERVICE_HOST: "127.0.0.1", PET_SERVICE_PORT: String(port), PETS_DB: opts.db, LOG_LEVEL: opts.logLevel },
    opts.dir,
    profileArgs(opts.profileDir, opts.name),
    opts.root,
  );
  await waitFor(proc, "grpc health SERVING", async () => (await checkHealth(address, "", { timeoutMs: 500 })) === "SERVING");
  return { proc, address };
}

export interface GatewayOptions {
  dir: string;
  name: string;
  /** PET_SERVICE_ADDR */
  petAddress: string;
  /** Unset: the in-memory limiter. */
  redisUrl?: string;
  keysDir: string;
  logLevel: string;
  profileDir?: string;
  /** Another checkout to run the gateway from (--compare); this one by default. */
  root?: string;
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
      KEYS_DIR: opts.keysDir,
      LOG_LEVEL: opts.logLevel,
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
