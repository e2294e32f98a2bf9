/**
 * `npm run bench`: what a request costs, per process, on every path from bare Express to the full
 * gateway, every part a real process on loopback.
 *
 * Starts a private redis-server (nothing on disk), the key service (its own process, SQLite
 * registry, publishing key records to that Redis; every gateway follows it), one pet service
 * (SQLite, LOG_LEVEL=info) shared by every scenario, two gateways in front of it (Redis limiter and memory limiter, LOG_LEVEL=info
 * as production logs, to a file), seeds 20 pets, takes the bytes of GET /v1/pets?limit=20 and
 * starts the fronts that answer them: bare Express (bench/bare-express.ts) and the two floors of
 * bench/express-grpc-floor.ts. Then, alternating scenario by scenario within each round (the order
 * rotating from round to round), drives each with wrk (HTTP, one thread, 32 connections) or
 * h2load (gRPC, one connection, 32 streams) and measures the CPU (utime + stime from /proc) of
 * every process per request served: the front (gateway or Express), the pet service, Redis and
 * the load generator (see scenarios.ts).
 *
 * Then issue 21's rows (tracing, TLS on the hop) at one offered rate below all their peaks
 * (hop-at-rate.ts); (b) at half of its median peak rate and (a) at that same rate, offered
 * open-loop at a constant rate (open-loop-rows.ts, the order rotating from round to round), to
 * compare p99 under moderate load; Redis commands per request; limiter memory.
 *
 * Prints one markdown table (medians over the rounds), the targets with ✅/❌ and the machine.
 * `--results FILE` also writes them, with how they were made, as the page FILE (`npm run bench`:
 * docs/benchmarks.md), after a full run only: never the figures of --smoke or --only, never
 * README.md. `--smoke` is CI's quick check that the script still works (1 s runs, 1 round, 4
 * connections, 3 pets); it asserts nothing about speed.
 *
 * Flags: --duration S (10) --rounds N (3) --connections N (32) --smoke --results FILE
 *        --only a,b,… (just these scenarios, no open-loop or Redis figures: for quick comparisons;
 *        sqlite-drivers: the SQLite driver comparison of bench/sqlite-drivers.ts)
 *        --profile DIR (gateways and pet service run with --cpu-prof, profiles written to DIR)
 *        --compare DIR (another checkout with node_modules: its pet service and gateways run beside
 *        ours as scenarios a@base, a-mem@base, c-mem@base, g@base and h@base; combine with --only a,a@base,…)
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { startRedis, type PrivateRedis } from "../testkit/redis-server.ts";
import { createKey, startKeyServiceProc } from "./key-service.ts";
import { openLoop, type Run } from "./load.ts";
import { log, stopAll } from "./processes.ts";
import { commandDelta, commandStats, commandsPerRequest, limiterMemory, summarizeCounts, type CommandCounts } from "./redis-stats.ts";
import { machine, runLine, summarize, writeResultsPage, type Summary } from "./report.ts";
import { hopRowsAtRate } from "./hop-at-rate.ts";
import { measureOpenLoop } from "./open-loop-rows.ts";
import { benchReport } from "./targets.ts";
import { roundOrder, type Scenario } from "./scenario.ts";
import { buildScenarios } from "./scenarios.ts";
import { sqliteDriverTable } from "./sqlite-drivers.ts";
import { fmt, today } from "../testkit/stats.ts";

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string" },
    rounds: { type: "string" },
    connections: { type: "string" },
    smoke: { type: "boolean", default: false },
    results: { type: "string" },
    only: { type: "string" },
    profile: { type: "string" },
    compare: { type: "string" },
  },
});

const positive = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`--${name} must be a positive number (got ${value})`);
  return n;
};

const smoke = flags.smoke;
const settings = {
  duration: Math.round(positive("duration", flags.duration, smoke ? 1 : 10)),
  rounds: Math.round(positive("rounds", flags.rounds, smoke ? 1 : 3)),
  connections: Math.round(positive("connections", flags.connections, smoke ? 4 : 32)),
  seed: smoke ? 3 : 20,
  warmupSeconds: smoke ? 0 : 3,
  /** Calls each gRPC-client candidate makes before it measures (bench/pet-client-driver.ts). */
  clientWarmupCalls: smoke ? 100 : 2_000,
  /** Requests spread over one simulated day for the limiter-memory measurement. */
  memoryHits: smoke ? 2_000 : 100_000,
  /** Sequential requests observed with MONITOR to count Redis commands per request. */
  monitorRequests: smoke ? 20 : 200,
};

const RESULTS_INTRO =
  "`npm run bench` (bench/run.ts and its modules) starts a private Redis, the key service, one pet service and two gateways (Redis and " +
  "memory limiter, both following the key service) as separate processes, seeds 20 pets and drives them with wrk and h2load (row (a-scoped): the full path with a key that has scopes and allowed networks; row (a-no-usage): a third gateway with USAGE_REPORTING=off, the full path without the usage history's counting and reports) beside bare Express, two " +
  "Express + grpc-js floors, a grpc-js server answering fixed bytes and, when Debian's Go packages are installed, " +
  "grpc-gateway (bench/grpc-gateway/, built offline), PostgreSQL (a private database) behind two pet-service replicas, " +
  "and the memory-limiter path again with tracing disabled, unset and on (1 % and 100 % sampled, to a local OTLP sink) " +
  "and with mTLS on the hop, those five also at one offered rate (half the slowest one's peak, open loop); rows (l) " +
  "are the gRPC-client candidates (bench/pet-client-driver.ts: grpc-js as the gateway used it, grpc-js " +
  "through makeUnaryRequest, the node:http2 client the gateway uses now), each its own process making ListPets(20) " +
  "calls. Every Node process runs on the project's runtime (the version below). Each process's CPU per request comes " +
  "from /proc (the client rows: the client's own process.cpuUsage()). " +
  "CI runs only `npm run bench -- --smoke` (tests/integration/bench.test.ts; `.ci/run` installs wrk and nghttp2-client " +
  "when missing), which checks that the script works, asserts nothing about speed and writes nothing. `--only KEYS` runs some " +
  "scenarios (`npm run bench:clients`: the client rows with (g) and (k)), `--compare DIR` runs another checkout beside " +
  "this one, `--profile DIR` writes CPU profiles (`bench/profile-top.ts` summarises them); none of those three writes " +
  "this page.";

let redisServer: PrivateRedis | undefined;
let cleanUp = async () => {};

async function main(): Promise<number> {
  // Every Node process of the bench (gateways, pet services, bare Express, the floors, the client
  // candidates, the SQLite drivers) runs on this one's runtime: through npm, the project's Node 26.
  if (Number(process.versions.node.split(".")[0]) < 26) {
    log(`runs on the project's runtime, Node 26 or newer (this is ${process.version}): use npm run bench`);
    return 2;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-bench-"));
  let stats: Redis | undefined;
  try {
    const redis = (redisServer = await startRedis());
    stats = new Redis(redis.url);
    log(`redis ${redis.url}; temp dir ${dir}`);
    // The gateways follow a real key service (its own process, publishing key records to the same Redis).
    const keyService = await startKeyServiceProc({ dir, name: "key-service", redisUrl: redis.url, logLevel: "info" });
    const unlimited = { plan: "enterprise", perMinute: 1e9, perDay: 1e9 } as const;
    const { key } = await createKey(keyService, { ...unlimited, name: "bench" });
    // (a-scoped): the same path with a key whose scopes and allowed networks the gateway checks on every request.
    const scoped = await createKey(keyService, { ...unlimited, name: "bench scoped", scopes: ["pets:read"], allowedCidrs: ["10.0.0.0/8", "127.0.0.0/8", "::1/128"] });
    const only = flags.only?.split(",");
    const built = await buildScenarios({
      dir,
      keyService,
      auth: { authorization: `Bearer ${key}` },
      scopedAuth: { authorization: `Bearer ${scoped.key}` },
      redis,
      settings,
      ...(flags.profile && { profileDir: flags.profile }),
      ...(only && { only }),
      ...(flags.compare && { compareRoot: path.resolve(flags.compare) }),
      goGateway: !smoke,
      postgres: !smoke,
      smoke,
    });
    cleanUp = built.cleanUp;
    const { scenarios, targets, notMeasured } = built;

    const full = !only;
    const monitor = full
      ? {
          a: await commandsPerRequest(redis.url, targets.a, settings.monitorRequests),
          aScoped: await commandsPerRequest(redis.url, { ...targets.a, headers: { authorization: `Bearer ${scoped.key}` } }, settings.monitorRequests),
          c: await commandsPerRequest(redis.url, targets.c, settings.monitorRequests),
          d: await commandsPerRequest(redis.url, targets.d, settings.monitorRequests),
        }
      : undefined;
    if (monitor) log(`Redis commands per request (MONITOR): a ${monitor.a}, a-scoped ${monitor.aScoped}, c ${monitor.c}, d ${monitor.d}`);

    if (settings.warmupSeconds) {
      log(`warming up (${settings.warmupSeconds} s each)`);
      for (const s of scenarios) await s.run(settings.warmupSeconds);
    }

    const runs = new Map<Scenario, Run[]>(scenarios.map((s) => [s, []]));
    const redisCounts: Record<"a" | "c", CommandCounts[]> = { a: [], c: [] };
    const failures: string[] = [];
    const check = (name: string, run: Run) => {
      if (run.failures) failures.push(`${name}: ${run.failures} unexpected responses or errors of ${run.requests}`);
    };
    for (let round = 1; round <= settings.rounds; round++) {
      for (const s of roundOrder(scenarios, round)) {
        const counted = s.key === "a" || s.key === "c" ? s.key : undefined;
        const before = counted && (await commandStats(stats));
        const run = await s.run(settings.duration);
        if (counted && before) redisCounts[counted].push(commandDelta(before, await commandStats(stats), run.requests));
        check(s.key, run);
        runs.get(s)!.push(run);
        log(`round ${round} ${s.key}: ${runLine(run)}`);
      }
    }
    const summaries = new Map<string, Summary>(scenarios.map((s) => [s.key, summarize(runs.get(s)!)]));

    const openLoopRows = await hopRowsAtRate({ scenarios, summaries, settings, check });
    // p99 at half of bare Express's peak: the same offered rate to both; and (a) at half its own peak.
    const a = scenarios.find((s) => s.key === "a");
    if (full && a) {
      const halfRate = Math.max(1, Math.round(summaries.get("b")!.rps / 2));
      const ownHalfRate = Math.max(1, Math.round(summaries.get("a")!.rps / 2));
      // (b)'s own CPU is not measured here: its row is for latency only.
      const bAtRate = (rate: number, seconds: number) => openLoop(targets.b, rate, { durationSeconds: seconds, connections: settings.connections, pids: {}, dir });
      const plan = [
        { key: "bHalf", label: `(b) at half peak: ${fmt(halfRate)} req/s offered`, rate: halfRate, atRate: bAtRate },
        { key: "aHalf", label: `(a) at half peak: ${fmt(halfRate)} req/s offered`, rate: halfRate, atRate: a.atRate! },
        { key: "aOwnHalf", label: `(a) at half its own peak: ${fmt(ownHalfRate)} req/s offered`, rate: ownHalfRate, atRate: a.atRate! },
      ];
      openLoopRows.push(...(await measureOpenLoop(plan, { settings, check })));
    }

    // The SQLite drivers side by side (bench/sqlite-drivers.ts): in a full run, or named in --only.
    const drivers = full || only?.includes("sqlite-drivers") ? await sqliteDriverTable({ dir, rounds: settings.rounds, smoke }) : undefined;
    const markdown = benchReport({
      settings,
      scenarios: scenarios.map((s) => ({ key: s.key, label: s.label, summary: summaries.get(s.key)! })),
      openLoopRows,
      ...(monitor && {
        redis: {
          monitor,
          a: summarizeCounts(redisCounts.a),
          c: summarizeCounts(redisCounts.c),
          memory: await limiterMemory(redis.url, settings.memoryHits),
        },
      }),
      notMeasured: [...notMeasured, ...(drivers?.notMeasured ?? [])],
      ...(drivers && { drivers: drivers.markdown }),
      machine: machine([
        `Redis ${/redis_version:(\S+)/.exec(await stats.info("server"))?.[1] ?? "?"}`,
        toolVersion("wrk", ["--version"], /^(wrk \S+)/m),
        toolVersion("h2load", ["--version"], /(nghttp2\/\S+)/),
      ]),
      when: today(),
    });
    process.stdout.write(`${markdown}\n`);
    if (failures.length) {
      log(`unexpected responses (${flags.results ?? "no results file"} not written):\n  ${failures.join("\n  ")}`);
      return 1;
    }
    if (flags.results && full && !smoke) {
      writeResultsPage(flags.results, RESULTS_INTRO, markdown);
      log(`${flags.results}: written`);
    } else if (flags.results) log(`${flags.results} left as it was: only a full run writes it`);
    return 0;
  } finally {
    await stopAll();
    await cleanUp();
    stats?.disconnect();
    await redisServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The version a tool prints (wrk prints it with its usage and exits 1). */
function toolVersion(tool: string, args: string[], pattern: RegExp): string {
  let out: string;
  try {
    out = execFileSync(tool, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    out = String((err as { stdout?: string }).stdout ?? "");
  }
  return pattern.exec(out)?.[1] ?? tool;
}

const interrupted = () =>
  void stopAll()
    .then(() => cleanUp())
    .then(() => redisServer?.stop())
    .finally(() => process.exit(130));
process.once("SIGINT", interrupted);
process.once("SIGTERM", interrupted);

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);

