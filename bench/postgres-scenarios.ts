import { createTestDatabase } from "../testkit/postgres.ts";
import { wrk, type HttpTarget } from "./load.ts";
import { LOG_LEVEL, type ScenarioKit } from "./scenario-kit.ts";
import type { Scenario } from "./scenario.ts";
import { seedPets, startGateway, startPetService, type Service } from "./stack.ts";

/** The PostgreSQL server of these rows (trust auth); each run creates a private database on it and drops it. */
const PG_SERVER = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432";

/**
 * The PostgreSQL rows: a private database behind two pet-service replicas (round robin), one
 * gateway with the Redis limiter; the CPU of both replicas added up, and PostgreSQL's backends.
 * Without a server, the reason goes to the kit's notMeasured.
 */
export async function postgresScenarios(kit: ScenarioKit): Promise<Scenario[]> {
  if (!kit.wanted("a-pg") && !kit.wanted("d-pg")) return [];
  const database = await createTestDatabase(`${PG_SERVER}/postgres`).catch((err: unknown) => ({
    missing: `PostgreSQL rows need a server (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432); CREATE DATABASE at ${PG_SERVER} failed: ${err instanceof Error ? err.message : String(err)}`,
  }));
  if ("missing" in database) {
    kit.notMeasured.push(database.missing);
    return [];
  }
  kit.cleanUps.push(database.drop);
  // One after the other: the first creates the schema.
  const replicas: Service[] = [];
  for (const i of [0, 1]) replicas.push(await startPetService({ dir: kit.dir, name: `pet-service-pg-${i}`, db: database.url, logLevel: LOG_LEVEL, ...kit.profile }));
  const front = await startGateway({
    dir: kit.dir,
    name: "gateway-pg",
    petAddress: `ipv4:${replicas.map((r) => r.address).join(",")}`,
    keys: kit.keyService.gatewayEnv,
    logLevel: LOG_LEVEL,
    redisUrl: kit.redis.url,
    ...kit.profile,
  });
  await seedPets(front.address, kit.auth, kit.settings.seed);
  const measured = { front: front.proc.pid, "pet:0": replicas[0]!.proc.pid, "pet:1": replicas[1]!.proc.pid, redis: kit.redis.process.pid! };
  // PostgreSQL's backends for the replicas' pooled connections, as they are when the run starts.
  const backendPids = async () =>
    (await database.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database.name])).map((r) => r.pid);
  const withBackends = async () => ({ ...measured, ...Object.fromEntries((await backendPids()).map((pid) => [`postgres:${pid}`, pid])) });
  const row = (key: string, label: string, target: HttpTarget): Scenario => ({
    key,
    label,
    pids: measured,
    run: async (seconds) => wrk(target, kit.loadOpts(await withBackends(), seconds)),
  });
  return [
    row("a-pg", "(a) full path, PostgreSQL behind two pet-service replicas (round robin; CPU of both replicas added up; PostgreSQL's backends in the last column)", kit.list(front)),
    row("d-pg", "(d) POST /v1/pets, PostgreSQL behind two pet-service replicas", kit.create(front)),
  ];
}
