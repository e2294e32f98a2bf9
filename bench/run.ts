/**
 * `npm run bench`: the gateway's full path measured against bare Express, with a real load
 * generator (autocannon), every part a real process on loopback.
 *
 * Starts a private redis-server (nothing on disk), the pet service and the gateway as separate
 * processes (`node --import tsx …/main.ts`, NODE_ENV=production, LOG_LEVEL=warn so logging does
 * not dominate; one extra run at LOG_LEVEL=info, as production logs), seeds 20 pets, fetches the
 * bytes of GET /v1/pets?limit=20 and starts bench/bare-express.ts answering those bytes. Then,
 * alternating round by round (a, b, c, d, a, b, c, d, …):
 *
 *   (a) GET /v1/pets?limit=20 through the gateway with an Enterprise key of 1e9/minute, 1e9/day
 *       (a plan that never limits): auth, quota (one EVALSHA), headers, logs and metrics, gRPC,
 *       SQLite, JSON;
 *   (b) the same bytes from bare Express;
 *   (c) auth + limiter only: GET /v1/bench-noop with the same key. No route matches, so the request
 *       passes request context, access log/metrics, the route labeller, the guard (JWT cache, EVALSHA,
 *       rate-limit headers) and ends in the router's 404 not_found Error body — it never reaches gRPC;
 *   (d) POST /v1/pets (a new pet per request, each acknowledged only once committed and fsynced).
 *
 * Then (b) at half of its median peak rate and (a) at that same rate, offered open-loop at a
 * constant rate (see openLoop), to compare p99 under moderate load.
 *
 * Prints one markdown table (medians over the rounds), the targets with ✅/❌, Redis commands per
 * request, limiter memory per key, and the machine. `--readme` also writes it into README.md's
 * "## Benchmarks" section. `--smoke` is CI's quick check that the script still works (1 s runs,
 * 1 round, 4 connections, 3 pets); it asserts nothing about speed.
 *
 * Flags: --duration S (10) --rounds N (3) --connections N (50) --smoke --readme --no-info
 *        --profile DIR (gateway and pet service run with --cpu-prof, profiles written to DIR)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import http from "node:http";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { createRedisStore } from "../gateway/limiter/redis-store.js";
import { windowsFor } from "../gateway/limiter/plans.js";
import { PRESENCE_KEY, redisKey, subjectForKey } from "../lib/redis-keys.js";
import { ensureKeyPair, issueKey } from "../keys/index.js";
import { freePort } from "../tests/helpers/net.js";
import { checkHealth } from "../tests/helpers/pet-service.js";
import { startRedis, type PrivateRedis } from "../tests/helpers/redis-server.js";

const ROOT = path.resolve(import.meta.dirname, "..");

// ---------------------------------------------------------------------------------------------
// Flags

const { values: flags } = parseArgs({
  options: {
    duration: { type: "string" },
    rounds: { type: "string" },
    connections: { type: "string" },
    smoke: { type: "boolean", default: false },
    readme: { type: "boolean", default: false },
    "no-info": { type: "boolean", default: false },
    profile: { type: "string" },
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
  duration: positive("duration", flags.duration, smoke ? 1 : 10),
  rounds: Math.round(positive("rounds", flags.rounds, smoke ? 1 : 3)),
  connections: Math.round(positive("connections", flags.connections, smoke ? 4 : 50)),
  seed: smoke ? 3 : 20,
  warmupSeconds: smoke ? 0 : 3,
  infoRun: !flags["no-info"],
  /** Requests spread over one simulated day for the limiter-memory measurement. */
  memoryHits: smoke ? 2_000 : 100_000,
  /** Sequential requests observed with MONITOR to count Redis commands per request. */
  monitorRequests: smoke ? 20 : 200,
};

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

// ---------------------------------------------------------------------------------------------
// Processes

interface Proc {
  name: string;
  child: ChildProcess;
  logFile: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves when it is gone. */
  stop(): Promise<void>;
}

const running = new Set<Proc>();
let redisServer: PrivateRedis | undefined;

function spawnNode(name: string, script: string, env: Record<string, string>, dir: string, nodeArgs: string[] = []): Proc {
  const logFile = path.join(dir, `${name}.log`);
  const fd = openSync(logFile, "a");
  // Only what the process needs from our environment: no REDIS_URL, PETS_DB, … leaking in.
  const inherited = Object.fromEntries(
    ["PATH", "HOME", "TMPDIR", "LANG", "NODE_OPTIONS"].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])),
  );
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", script], {
    cwd: ROOT,
    env: { ...inherited, NODE_ENV: "production", ...env },
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const proc: Proc = {
    name,
    child,
    logFile,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(force);
      }
      running.delete(proc);
    },
  };
  running.add(proc);
  return proc;
}

const tail = (file: string): string => {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "";
  }
};

async function waitFor(proc: Proc, what: string, ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited at start:\n${tail(proc.logFile)}`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${proc.name}: ${what} not reached in ${timeoutMs} ms:\n${tail(proc.logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Stack {
  pet: Proc;
  gateway: Proc;
  petAddress: string;
  gatewayUrl: string;
}

async function startStack(opts: { dir: string; redisUrl: string; keysDir: string; dbPath: string; logLevel: string }): Promise<Stack> {
  const profile = (name: string) =>
    flags.profile ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(flags.profile, name)] : [];
  const petPort = await freePort();
  const petAddress = `127.0.0.1:${petPort}`;
  const pet = spawnNode(
    `pet-service-${opts.logLevel}`,
    "pet-service/main.ts",
    { PET_SERVICE_HOST: "127.0.0.1", PET_SERVICE_PORT: String(petPort), PETS_DB: opts.dbPath, LOG_LEVEL: opts.logLevel },
    opts.dir,
    profile("pet-service"),
  );
  await waitFor(pet, "grpc health SERVING", async () => (await checkHealth(petAddress, "", { timeoutMs: 500 })) === "SERVING");

  const gatewayPort = await freePort();
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const gateway = spawnNode(
    `gateway-${opts.logLevel}`,
    "gateway/main.ts",
    {
      GATEWAY_HOST: "127.0.0.1",
      GATEWAY_PORT: String(gatewayPort),
      PET_SERVICE_ADDR: petAddress,
      REDIS_URL: opts.redisUrl,
      KEYS_DIR: opts.keysDir,
      LOG_LEVEL: opts.logLevel,
    },
    opts.dir,
    profile("gateway"),
  );
  await waitFor(gateway, "/readyz 200", async () => (await fetch(`${gatewayUrl}/readyz`)).status === 200);
  return { pet, gateway, petAddress, gatewayUrl };
}

async function stopStack(stack: Stack): Promise<void> {
  await stack.gateway.stop();
  await stack.pet.stop();
}

// ---------------------------------------------------------------------------------------------
// Load

interface Target {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** The status every response must have. */
  status: number;
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Responses with another status than expected, connection errors and timeouts. */
  failures: number;
  statuses: Record<string, number>;
}

async function load(target: Target, opts: { duration: number }): Promise<Run> {
  const instance = autocannon({
    url: target.url,
    method: target.method ?? "GET",
    ...(target.headers && { headers: target.headers }),
    ...(target.body !== undefined && { body: target.body }),
    connections: settings.connections,
    duration: opts.duration,
  });
  // autocannon's own histogram has 1 ms resolution: keep every response time (fractional ms).
  const latencies: number[] = [];
  instance.on("response", (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await instance;
  latencies.sort((x, y) => x - y);
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  const requests = result.requests.total;
  const expected = statuses[String(target.status)] ?? 0;
  return {
    rps: requests / result.duration,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    requests,
    failures: requests - expected + result.errors + result.timeouts,
    statuses,
  };
}

/**
 * Open-loop load at a constant offered rate (for latency at a given load): a request is due every
 * 1/rate s whatever happened to the earlier ones, over at most `connections` keep-alive connections
 * (requests wait for a free one), and each latency runs from the moment the request was due, so
 * a slow response is not hidden by the requests it held back (no coordinated omission).
 * autocannon's overallRate is not used for this: it sends each connection's share of a second in
 * a burst at the start of the second, which is not half load.
 */
async function openLoop(target: Target, rate: number, durationSeconds: number): Promise<Run> {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: settings.connections });
  const options: http.RequestOptions = {
    agent,
    host: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method: target.method ?? "GET",
    headers: { ...target.headers, ...(target.body !== undefined && { "content-length": String(Buffer.byteLength(target.body)) }) },
  };
  const send = (onDone: (status: number | undefined) => void) => {
    const req = http.request(options, (res) => {
      res.on("data", () => {});
      res.on("end", () => onDone(res.statusCode));
    });
    req.on("error", () => onDone(undefined));
    req.end(target.body);
  };
  // Open the connections first, so connecting is not measured.
  await Promise.all(Array.from({ length: settings.connections }, () => new Promise((resolve) => send(resolve))));

  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let failures = 0;
  const total = Math.max(1, Math.round(rate * durationSeconds));
  const intervalMs = 1000 / rate;
  const start = performance.now();
  let sent = 0;
  let completed = 0;
  await new Promise<void>((resolve) => {
    const fire = (due: number) =>
      send((status) => {
        latencies.push(performance.now() - due);
        if (status === undefined) failures++;
        else {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status !== target.status) failures++;
        }
        if (++completed === total) resolve();
      });
    const tick = () => {
      const now = performance.now();
      for (let due = start + sent * intervalMs; sent < total && due <= now; due = start + sent * intervalMs) {
        fire(due);
        sent++;
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    tick();
  });
  const elapsedSeconds = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((x, y) => x - y);
  return {
    rps: completed / elapsedSeconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    requests: completed,
    failures,
    statuses,
  };
}

const percentile = (sorted: readonly number[], q: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : NaN;

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

interface Summary {
  rps: number;
  p50: number;
  p99: number;
  runs: Run[];
}

const summarize = (runs: Run[]): Summary => ({
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  runs,
});

// ---------------------------------------------------------------------------------------------
// Redis: commands per request, limiter memory per key

/** Per-command call counts from INFO commandstats. */
async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const stats = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(m[1]!, Number(m[2]));
  return stats;
}

/** Commands the limiter's Lua script runs inside Redis (redis.call): not round trips. */
const SCRIPT_INTERNAL = new Set(["time", "hmget", "hget", "hset", "hdel", "del", "exists", "get", "set", "pexpire"]);

interface CommandCounts {
  /** EVALSHA/EVAL per request: the script runs. */
  scripts: number;
  /** Commands run inside the script per request (commandstats counts them too). */
  internal: number;
  /** Any other command per request (should be 0). */
  other: number;
}

function commandDelta(before: Map<string, number>, after: Map<string, number>, requests: number): CommandCounts {
  const counts = { scripts: 0, internal: 0, other: 0 };
  for (const [name, calls] of after) {
    const delta = calls - (before.get(name) ?? 0);
    if (delta <= 0 || name === "info") continue; // INFO: our own sampling
    if (name === "evalsha" || name === "eval") counts.scripts += delta;
    else if (SCRIPT_INTERNAL.has(name)) counts.internal += delta;
    else counts.other += delta;
  }
  return { scripts: counts.scripts / requests, internal: counts.internal / requests, other: counts.other / requests };
}

/**
 * Exact round trips per request: MONITOR shows every command a client sends, and the commands
 * a script runs marked as coming from "lua"; those are not round trips. Sequential requests. The
 * gateway's presence heartbeat (one script call a second, whatever the traffic) is not a request's.
 */
async function commandsPerRequest(redisUrl: string, target: Target, requests: number): Promise<number> {
  const client = new Redis(redisUrl);
  const monitor = await client.monitor();
  const marker = `bench-marker-${process.pid}-${Date.now()}`;
  let sent = 0;
  let markerSeen: () => void = () => {};
  const seen = new Promise<void>((resolve) => (markerSeen = resolve));
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    if (args[1] === marker) markerSeen();
    else if (source !== "lua" && !args.includes(PRESENCE_KEY)) sent++;
  });
  await client.ping(marker); // MONITOR is live once it shows this
  await seen;
  const done = new Promise<void>((resolve) => (markerSeen = resolve));
  for (let i = 0; i < requests; i++) {
    const res = await fetch(target.url, {
      method: target.method ?? "GET",
      headers: target.headers ?? {},
      ...(target.body !== undefined && { body: target.body }),
    });
    await res.arrayBuffer();
    if (res.status !== target.status) throw new Error(`${target.url}: expected ${target.status}, got ${res.status}`);
  }
  // MONITOR shows commands in the order Redis ran them: once the marker is back, every command of
  // those requests has been counted.
  await client.ping(marker);
  await done;
  monitor.disconnect();
  client.disconnect();
  return sent / requests;
}

interface MemoryReport {
  bytes: number;
  minuteBytes: number;
  dayBytes: number;
  minuteFields: number;
  dayFields: number;
  encoding: string;
  admitted: number;
}

/**
 * Limiter memory of one Business key (1,000/minute, 100,000/day) at full use. Redis TIME cannot
 * be moved from outside, so the Redis store runs here with an injected clock (the same script,
 * deciding at the given instant) and takes `hits` requests spread evenly over one simulated day
 * (less than 1 s apart, so the last minute's 1 s buckets are all in use too, as are the 24 min
 * buckets of the day); then MEMORY USAGE of the key's two window hashes.
 */
async function limiterMemory(redisUrl: string, hits: number): Promise<MemoryReport> {
  const redis = new Redis(redisUrl);
  const DAY_MS = 86_400_000;
  const dayBucketMs = DAY_MS / 60;
  // Start on a day-bucket boundary: then no hit of the day has left the window at the end.
  const start = Math.floor(Date.now() / dayBucketMs) * dayBucketMs - DAY_MS;
  let now = start;
  const store = createRedisStore({ redis, ban: { after: 20, seconds: 900 }, clock: () => now });
  const subject = subjectForKey("bench-memory");
  const windows = windowsFor({ plan: "business" });
  // hits − 60 evenly over the day but its last minute, then one per second in the last minute: the
  // day's quota in use (and not exceeded: nothing refused) with every bucket of both windows filled.
  const spread = hits - 60;
  const times = Array.from({ length: spread }, (_, k) => start + Math.floor((k * (DAY_MS - 60_000)) / spread));
  for (let s = 60; s >= 1; s--) times.push(start + DAY_MS - s * 1000);
  let admitted = 0;
  for (let i = 0; i < times.length; i += 500) {
    const batch = times.slice(i, i + 500).map((at) => {
      now = at;
      return store.hit(subject, windows); // reads the clock synchronously, so each decides at its own `at`
    });
    for (const d of await Promise.all(batch)) if (d.outcome === "admitted") admitted++;
  }
  const m = redisKey(subject, "m");
  const d = redisKey(subject, "d");
  const usage = async (key: string) => Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
  const report: MemoryReport = {
    minuteBytes: await usage(m),
    dayBytes: await usage(d),
    minuteFields: await redis.hlen(m),
    dayFields: await redis.hlen(d),
    encoding: String(await redis.call("OBJECT", "ENCODING", d)),
    admitted,
    bytes: 0,
  };
  report.bytes = report.minuteBytes + report.dayBytes;
  await redis.del(m, d);
  redis.disconnect();
  return report;
}

// ---------------------------------------------------------------------------------------------
// Report

interface Results {
  a: Summary;
  b: Summary;
  c: Summary;
  d: Summary;
  aInfo?: Summary;
  halfRate: number;
  bHalf: Summary;
  aHalf: Summary;
  ownHalfRate: number;
  aOwnHalf: Summary;
  commandStatsA: CommandCounts;
  commandStatsC: CommandCounts;
  monitor: { a: number; c: number; d: number };
  memory: MemoryReport;
  machine: string;
  when: string;
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number) => fmt(n, n < 10 ? 1 : 0);
const ok = (pass: boolean) => (pass ? "✅" : "❌");

function report(r: Results): string {
  const ratio = (s: Summary) => `${fmt(s.rps / r.b.rps, 2)}×`;
  const row = (name: string, s: Summary, vs: string) => `| ${name} | ${fmt(s.rps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${vs} |`;
  const aOverB = r.a.rps / r.b.rps;
  const cOverB = r.c.rps / r.b.rps;
  const p99Gap = r.aHalf.p99 - r.bHalf.p99;
  const exactlyOne = [r.monitor.a, r.monitor.c, r.monitor.d].every((n) => n === 1);
  const lines = [
    `Settings: ${settings.rounds} round(s) × ${settings.duration} s per scenario, ${settings.connections} connections, ` +
      `autocannon (closed loop), runs alternating a, b, c, d; medians over the rounds. ${r.when}.`,
    "",
    `Machine: ${r.machine}.`,
    "",
    "| Scenario | req/s (median) | p50 ms | p99 ms | vs (b) |",
    "|---|---:|---:|---:|---:|",
    row("(a) full path: GET /v1/pets?limit=20 (auth, Redis quota, gRPC, SQLite; 20 pets)", r.a, ratio(r.a)),
    row("(b) bare Express: GET /v1/pets, the same bytes", r.b, "1.00×"),
    row("(c) auth + limiter only: GET /v1/bench-noop → 404 after the guard", r.c, ratio(r.c)),
    row("(d) POST /v1/pets (a new pet each, committed and fsynced)", r.d, ratio(r.d)),
    r.aInfo ? row("(a) full path at LOG_LEVEL=info (production logging)", r.aInfo, ratio(r.aInfo)) : "",
    row(`(b) at half peak: ${fmt(r.halfRate)} req/s offered`, r.bHalf, "—"),
    row(`(a) at half peak: ${fmt(r.halfRate)} req/s offered`, r.aHalf, "—"),
    row(`(a) at half its own peak: ${fmt(r.ownHalfRate)} req/s offered`, r.aOwnHalf, "—"),
    "",
    "Targets (2 cores, everything local):",
    `- ${ok(aOverB >= 0.5)} full path ≥ 0.5 × bare Express: ${fmt(aOverB, 2)}×`,
    `- ${ok(cOverB >= 0.8)} auth + limiter ≥ 0.8 × bare Express: ${fmt(cOverB, 2)}×`,
    `- ${ok(exactlyOne)} exactly 1 Redis command per request: ${fmt(r.monitor.a, 2)} (a), ${fmt(r.monitor.c, 2)} (c), ${fmt(r.monitor.d, 2)} (d)`,
    `- ${ok(p99Gap <= 5)} p99 at half of bare Express's peak within 5 ms of bare Express: ${ms(r.aHalf.p99)} vs ${ms(r.bHalf.p99)} ms (${p99Gap >= 0 ? "+" : ""}${ms(p99Gap)} ms)`,
    "",
    `Redis during (a): ${fmt(r.commandStatsA.scripts, 2)} EVALSHA + ${fmt(r.commandStatsA.other, 2)} other commands per request ` +
      `(INFO commandstats; the script itself runs ${fmt(r.commandStatsA.internal, 1)} commands inside Redis per request); ` +
      `during (c): ${fmt(r.commandStatsC.scripts, 2)} + ${fmt(r.commandStatsC.other, 2)}.`,
    "",
    `Limiter memory per key at 100,000/day: ${fmt(r.memory.bytes)} bytes after ${fmt(r.memory.admitted)} admitted requests ` +
      `(minute hash ${fmt(r.memory.minuteBytes)} B with ${r.memory.minuteFields} fields, day hash ${fmt(r.memory.dayBytes)} B with ${r.memory.dayFields} fields, ${r.memory.encoding}).`,
    "",
    "Notes: (c) is an authenticated request to a /v1 path no route serves: it runs everything of (a) up to and including " +
      "the guard (request id, access log and metrics, JWT cache, the quota's EVALSHA, rate-limit headers) and ends in the " +
      "404 Error body, never reaching gRPC. (b) has the gateway's Express settings (no ETag, no X-Powered-By). " +
      "Redis commands per request are counted exactly with MONITOR over " +
      `${settings.monitorRequests} sequential requests of each scenario (commands a script runs show as "lua" and are not round trips). ` +
      `Limiter memory: Redis TIME cannot be moved from outside, so a Business key's ${fmt(settings.memoryHits)} requests were spread ` +
      "evenly over one simulated day through the Redis store with an injected clock (same Lua script), filling all of the " +
      "day's 24 min buckets and the last minute's 1 s buckets; then MEMORY USAGE of its two window hashes. " +
      "Half-peak rows: (b)'s median peak ÷ 2 (and, for context, (a)'s own) offered open-loop at a constant rate (a request due " +
      `every 1/rate s over ${settings.connections} keep-alive connections, latency counted from when it was due, so queueing ` +
      "behind slow responses is included; the req/s column is the rate achieved).",
  ];
  return lines.filter((l, i) => l !== "" || lines[i - 1] !== "").join("\n");
}

function writeReadme(markdown: string): void {
  const file = path.join(ROOT, "README.md");
  const readme = readFileSync(file, "utf8");
  const section =
    "## Benchmarks\n\n" +
    "`npm run bench` (bench/run.ts) starts a private Redis, the pet service and the gateway as separate processes, seeds " +
    "20 pets and drives them with autocannon against a bare Express app answering the same bytes (bench/bare-express.ts); " +
    "it rewrites this section. CI runs only `bench/run.ts --smoke` (tests/integration/bench.test.ts), which checks that the " +
    "script works and asserts nothing about speed. Latest run:\n\n" +
    `${markdown}\n`;
  const start = readme.search(/^## Benchmarks[ \t]*$/m);
  let next: string;
  if (start < 0) next = `${readme.trimEnd()}\n\n${section}`;
  else {
    const rest = readme.slice(start + 1);
    const end = rest.search(/^## /m);
    next = readme.slice(0, start) + section + (end < 0 ? "" : `\n${rest.slice(end)}`);
  }
  writeFileSync(file, next);
}

async function machine(redis: Redis): Promise<string> {
  const cpus = os.cpus();
  const version = /redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "?";
  const autocannonVersion = (JSON.parse(readFileSync(path.join(ROOT, "node_modules/autocannon/package.json"), "utf8")) as { version: string }).version;
  return `${cpus[0]?.model.trim() ?? "?"}, ${cpus.length} cores, ${fmt(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, ` +
    `Node ${process.version}, Redis ${version}, autocannon ${autocannonVersion}`;
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-bench-"));
  const keysDir = path.join(dir, "keys");
  mkdirSync(keysDir);
  ensureKeyPair(keysDir);
  const key = issueKey(keysDir, { plan: "enterprise", perMinute: 1e9, perDay: 1e9, name: "bench" });
  const auth = { authorization: `Bearer ${key}` };
  const dbPath = path.join(dir, "pets.sqlite");

  let stats: Redis | undefined;
  try {
    const redis = (redisServer = await startRedis());
    stats = new Redis(redis.url);
    log(`redis ${redis.url}; temp dir ${dir}`);
    let stack = await startStack({ dir, redisUrl: redis.url, keysDir, dbPath, logLevel: "warn" });

    // Seed, then take the exact bytes of the measured response for bare Express.
    const statuses = ["available", "pending", "sold"];
    for (let i = 1; i <= settings.seed; i++) {
      const res = await fetch(`${stack.gatewayUrl}/v1/pets`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: `Seed pet ${i}`, categoryId: 1 + (i % 4), status: statuses[i % 3] }),
      });
      if (res.status !== 201) throw new Error(`seeding: POST /v1/pets answered ${res.status}: ${await res.text()}`);
    }
    const listUrl = `${stack.gatewayUrl}/v1/pets?limit=20`;
    const listed = await fetch(listUrl, { headers: auth });
    const body = await listed.text();
    if (listed.status !== 200) throw new Error(`GET /v1/pets?limit=20 answered ${listed.status}: ${body}`);
    const bodyFile = path.join(dir, "body.json");
    writeFileSync(bodyFile, body);

    const barePort = await freePort();
    const bare = spawnNode("bare-express", "bench/bare-express.ts", { BARE_PORT: String(barePort), BARE_BODY_FILE: bodyFile }, dir);
    const bareUrl = `http://127.0.0.1:${barePort}/v1/pets?limit=20`;
    await waitFor(bare, "listening", async () => (await fetch(bareUrl)).status === 200);
    if ((await (await fetch(bareUrl)).text()) !== body) throw new Error("bare Express does not answer the gateway's bytes");

    const targets = (s: Stack): Record<"a" | "b" | "c" | "d", Target> => ({
      a: { url: `${s.gatewayUrl}/v1/pets?limit=20`, headers: auth, status: 200 },
      b: { url: bareUrl, status: 200 },
      c: { url: `${s.gatewayUrl}/v1/bench-noop`, headers: auth, status: 404 },
      d: {
        url: `${s.gatewayUrl}/v1/pets`,
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: "Bench pet", categoryId: 7, status: "pending" }),
        status: 201,
      },
    });
    let t = targets(stack);

    const monitor = {
      a: await commandsPerRequest(redis.url, t.a, settings.monitorRequests),
      c: await commandsPerRequest(redis.url, t.c, settings.monitorRequests),
      d: await commandsPerRequest(redis.url, t.d, settings.monitorRequests),
    };
    log(`Redis commands per request (MONITOR): a ${monitor.a}, c ${monitor.c}, d ${monitor.d}`);

    if (settings.warmupSeconds) {
      log(`warming up (${settings.warmupSeconds} s each)`);
      for (const k of ["a", "b", "c", "d"] as const) await load(t[k], { duration: settings.warmupSeconds });
    }

    const runs: Record<"a" | "b" | "c" | "d", Run[]> = { a: [], b: [], c: [], d: [] };
    const statsA: CommandCounts[] = [];
    const statsC: CommandCounts[] = [];
    const failures: string[] = [];
    const check = (name: string, run: Run) => {
      if (run.failures) failures.push(`${name}: ${run.failures} unexpected (statuses ${JSON.stringify(run.statuses)})`);
    };
    for (let round = 1; round <= settings.rounds; round++) {
      for (const k of ["a", "b", "c", "d"] as const) {
        const before = k === "a" || k === "c" ? await commandStats(stats) : undefined;
        const run = await load(t[k], { duration: settings.duration });
        if (before) (k === "a" ? statsA : statsC).push(commandDelta(before, await commandStats(stats), run.requests));
        check(k, run);
        runs[k].push(run);
        log(`round ${round} ${k}: ${fmt(run.rps)} req/s, p50 ${ms(run.p50)} ms, p99 ${ms(run.p99)} ms`);
      }
    }
    const summary = { a: summarize(runs.a), b: summarize(runs.b), c: summarize(runs.c), d: summarize(runs.d) };

    // p99 at half of bare Express's peak: the same offered rate to both.
    const halfRate = Math.max(1, Math.round(summary.b.rps / 2));
    // And, for context, (a) at half of its own peak.
    const ownHalfRate = Math.max(1, Math.round(summary.a.rps / 2));
    const half = { a: [] as Run[], b: [] as Run[], aOwn: [] as Run[] };
    for (let round = 1; round <= settings.rounds; round++) {
      for (const [k, target, rate] of [["b", t.b, halfRate], ["a", t.a, halfRate], ["aOwn", t.a, ownHalfRate]] as const) {
        const run = await openLoop(target, rate, settings.duration);
        check(`${k} at ${rate} req/s`, run);
        half[k].push(run);
        log(`open-loop round ${round} ${k} at ${fmt(rate)} req/s: p50 ${ms(run.p50)} ms, p99 ${ms(run.p99)} ms`);
      }
    }

    // One run as production logs: both processes at LOG_LEVEL=info (JSON lines to a file).
    let aInfo: Summary | undefined;
    if (settings.infoRun) {
      await stopStack(stack);
      stack = await startStack({ dir, redisUrl: redis.url, keysDir, dbPath, logLevel: "info" });
      t = targets(stack);
      if (settings.warmupSeconds) await load(t.a, { duration: settings.warmupSeconds });
      const run = await load(t.a, { duration: settings.duration });
      check("a at LOG_LEVEL=info", run);
      aInfo = summarize([run]);
      log(`a at LOG_LEVEL=info: ${fmt(run.rps)} req/s, p50 ${ms(run.p50)} ms, p99 ${ms(run.p99)} ms`);
    }

    const memory = await limiterMemory(redis.url, settings.memoryHits);
    const markdown = report({
      ...summary,
      ...(aInfo && { aInfo }),
      halfRate,
      bHalf: summarize(half.b),
      aHalf: summarize(half.a),
      ownHalfRate,
      aOwnHalf: summarize(half.aOwn),
      commandStatsA: summarizeCounts(statsA),
      commandStatsC: summarizeCounts(statsC),
      monitor,
      memory,
      machine: await machine(stats),
      when: new Date().toISOString().slice(0, 10),
    });
    process.stdout.write(`${markdown}\n`);
    await stopStack(stack);
    await bare.stop();
    if (failures.length) {
      log(`unexpected responses (README not updated):\n  ${failures.join("\n  ")}`);
      return 1;
    }
    if (flags.readme) {
      writeReadme(markdown);
      log("README.md: Benchmarks section updated");
    }
    return 0;
  } finally {
    await Promise.all([...running].map((p) => p.stop()));
    stats?.disconnect();
    await redisServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function summarizeCounts(counts: CommandCounts[]): CommandCounts {
  return {
    scripts: median(counts.map((c) => c.scripts)),
    internal: median(counts.map((c) => c.internal)),
    other: median(counts.map((c) => c.other)),
  };
}

const stopAll = () =>
  void Promise.all([...running].map((p) => p.stop()))
    .then(() => redisServer?.stop())
    .finally(() => process.exit(130));
process.once("SIGINT", stopAll);
process.once("SIGTERM", stopAll);

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
