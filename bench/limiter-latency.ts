/**
 * `npm run bench:limiter-latency`: how long the limiter's one Redis round trip takes as a gateway
 * sees it — from the decision sent to its reply handled, event-loop delays included, which is what
 * REDIS_COMMAND_TIMEOUT_MS is compared with — under load. Its default was chosen from these figures
 * (docs/performance.md, "The limiter's Redis round trip under load").
 *
 * Two gateway processes (LOG_LEVEL=info, as production logs) on one private redis-server and one
 * pet service (SQLite, 20 pets), each with a command timeout far above anything measured, so the
 * tail is not cut off. Each gateway measures into gateway_limiter_redis_duration_seconds; the
 * histograms are scraped before and after each load. Loads, alternating within each round:
 *   wrk     one gateway, wrk -t1 -c32 on GET /v1/pets?limit=20 (the bench's rows), --duration s
 *   wrk×2   both gateways at once, each under its own wrk -t1 -c32
 *   bursts  100 concurrent GET /v1/pets?limit=1 split over both gateways, 20 bursts, each on a
 *           fresh key of 40 a minute (tests/faults/gateway/redis-slow.test.ts's burst)
 * Prints, per load: decisions measured, and the bucket bounds under which 50 %, 99 %, 99.9 % of
 * them and the largest fall.
 *
 * Flags: --rounds N (3) --duration S (10) --smoke (1 round of 2 s, 3 bursts: CI's check that it runs).
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { histogramBuckets, parseExposition } from "../testkit/promql.ts";
import { startRedis, type PrivateRedis } from "../testkit/redis-server.ts";
import { bucketSpread, type Buckets } from "../testkit/stats.ts";
import { wrk } from "./load.ts";
import { log, stopAll } from "./processes.ts";
import { seedPets, startGateway, startPetService, type Service } from "./stack.ts";
import { createKey, startKeyServiceProc, type KeyServiceProc } from "./key-service.ts";

const { values: flags } = parseArgs({
  options: { rounds: { type: "string" }, duration: { type: "string" }, smoke: { type: "boolean", default: false } },
});
const smoke = flags.smoke;
const rounds = smoke ? 1 : Number(flags.rounds ?? 3);
const durationSeconds = smoke ? 2 : Number(flags.duration ?? 10);
const bursts = smoke ? 3 : 20;
if (!(rounds >= 1) || !(durationSeconds >= 1)) throw new Error("--rounds and --duration must be positive numbers");

const HISTOGRAM = "gateway_limiter_redis_duration_seconds";

async function buckets(gateways: readonly Service[]): Promise<Buckets> {
  const all = await Promise.all(gateways.map(async (g) => parseExposition(await (await fetch(`${g.address}/metrics`)).text())));
  return histogramBuckets(all.flat(), HISTOGRAM);
}

/** 100 concurrent requests split over the gateways, on a fresh key each time; throws on a 5xx. */
async function burst(gateways: readonly Service[], keyService: KeyServiceProc): Promise<void> {
  const { key } = await createKey(keyService, { plan: "enterprise", perMinute: 40, perDay: 100_000, name: "burst" });
  const statuses = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const res = await fetch(`${gateways[i % gateways.length]!.address}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } });
      await res.arrayBuffer();
      return res.status;
    }),
  );
  if (statuses.some((s) => s >= 500)) throw new Error(`a burst got ${statuses.filter((s) => s >= 500).join(", ")}`);
}

const fmtMs = (seconds: number) => (seconds === Infinity ? "∞" : `${+(seconds * 1000).toFixed(1)} ms`);

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-limiter-latency-"));
  let redis: PrivateRedis | undefined;
  try {
    redis = await startRedis();
    const keyService = await startKeyServiceProc({ dir, name: "key-service", redisUrl: redis.url, logLevel: "info" });
    const { key } = await createKey(keyService, { plan: "enterprise", perMinute: 1e9, perDay: 1e9, name: "bench" });
    const auth = { authorization: `Bearer ${key}` };
    const pet = await startPetService({ dir, name: "pet-service", db: path.join(dir, "pets.sqlite"), logLevel: "info" });
    const gateways = await Promise.all(
      ["gateway-a", "gateway-b"].map((name) =>
        startGateway({ dir, name, petAddress: pet.address, redisUrl: redis!.url, keys: keyService.gatewayEnv, logLevel: "info", env: { REDIS_COMMAND_TIMEOUT_MS: "60000" } }),
      ),
    );
    await seedPets(gateways[0]!.address, auth, 20);
    const target = (g: Service) => ({ url: `${g.address}/v1/pets?limit=20`, headers: auth, status: 200 });
    // A directory per gateway: wrk's script is written there, and two at once must not share one.
    const wrkDir = (g: Service) => path.join(dir, g.proc.name);
    for (const g of gateways) mkdirSync(wrkDir(g));
    const wrkOn = (g: Service) => wrk(target(g), { durationSeconds, connections: 32, pids: { front: g.proc.pid }, dir: wrkDir(g) });
    const loads: Record<string, () => Promise<unknown>> = {
      wrk: () => wrkOn(gateways[0]!),
      "wrk×2": () => Promise.all(gateways.map(wrkOn)),
      bursts: async () => {
        for (let i = 0; i < bursts; i++) await burst(gateways, keyService);
      },
    };
    const spreads = new Map<string, ReturnType<typeof bucketSpread>[]>();
    for (let round = 0; round < rounds; round++) {
      const names = Object.keys(loads);
      for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
        const before = await buckets(gateways);
        await loads[name]!();
        const spread = bucketSpread(before, await buckets(gateways));
        spreads.set(name, [...(spreads.get(name) ?? []), spread]);
        log(`round ${round + 1}: ${name}: ${spread.count} decisions, p99.9 ≤ ${fmtMs(spread.atMost(0.999))}, largest in (${fmtMs(spread.largest[0])}, ${fmtMs(spread.largest[1])}]`);
      }
    }
    console.log(`\nThe limiter's Redis round trip as each gateway sees it (${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)} at the end; one row per load and round)\n`);
    console.log("| load | round | decisions | p50 ≤ | p99 ≤ | p99.9 ≤ | largest in |");
    console.log("|---|---:|---:|---:|---:|---:|---|");
    for (const [name, list] of spreads) {
      list.forEach((s, i) =>
        console.log(`| ${name} | ${i + 1} | ${s.count} | ${fmtMs(s.atMost(0.5))} | ${fmtMs(s.atMost(0.99))} | ${fmtMs(s.atMost(0.999))} | (${fmtMs(s.largest[0])}, ${fmtMs(s.largest[1])}] |`),
      );
    }
  } finally {
    await stopAll();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
