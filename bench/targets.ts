import type { CommandCounts, MemoryReport } from "./redis-stats.ts";
import { cpuByKind, ok, TABLE_HEADER, tableRow, type ReportRow, type Summary } from "./report.ts";
import { fmt, median } from "../testkit/stats.ts";
import type { Run } from "./load.ts";
import { atRateKey } from "./hop-at-rate.ts";

/** The benchmark's report: the table, the targets of the runtime and hot-path issue with ✅/❌, Redis figures and notes. */

export interface ReportInput {
  settings: { rounds: number; duration: number; connections: number; monitorRequests: number; memoryHits: number };
  scenarios: ReportRow[];
  /** Rows offered one constant rate, open loop: the hop rows at one rate, (a) and (b) at half peak. */
  openLoopRows: ReportRow[];
  redis?: { monitor: { a: number; aScoped: number; c: number; d: number }; a: CommandCounts; c: CommandCounts; memory: MemoryReport };
  notMeasured: string[];
  /** The SQLite driver comparison's table (bench/sqlite-drivers.ts), when it ran. */
  drivers?: string[];
  machine: string;
  when: string;
}

/** Gateway CPU per GET /v1/pets?limit=20 at most this share of grpc-gateway's (Go) in the same rounds (aim 0.5). */
const GATEWAY_VS_GO = 0.6;
/** The Redis limiter's path may cost the gateway at most this many CPU-µs per request more than the memory limiter's. */
const REDIS_EXTRA_US = 40;
/** The pet service's ListPets(20) at most this multiple of the fixed-reply floor (k) (issue 38; aim 2). */
const PET_VS_FLOOR = 2.5;
/** Full-path throughput at least this multiple of grpc-gateway's. */
const THROUGHPUT_VS_GO = 1.3;
/** Tracing on at a 1 % sampler may cost the gateway + the pet service at most this many CPU-µs per request (issue 21). */
const TRACING_1PCT_US = 15;

export function benchReport(r: ReportInput): string {
  const get = (key: string) => [...r.scenarios, ...r.openLoopRows].find((s) => s.key === key)?.summary;
  const bare = get("b");
  const ratio = (s: Summary) => (bare ? s.rps / bare.rps : undefined);
  const lines = [
    `Settings: ${r.settings.rounds} round(s) × ${r.settings.duration} s per scenario, ${r.settings.connections} connections ` +
      `(wrk: one thread, keep-alive; h2load: one connection, that many streams), scenarios alternating within each round, their order rotating from round to round; ` +
      `medians over the rounds. CPU-µs/req: utime + stime from /proc of each process during the run ÷ requests served ` +
      `(front = the gateway or Express app under load). Everything at LOG_LEVEL=info. ${r.when}.`,
    "",
    `Machine: ${r.machine}.`,
    "",
    ...TABLE_HEADER,
    ...r.scenarios.map((s) => tableRow(s.label, s.summary, ["g", "h", "k"].includes(s.key) || s.key.startsWith("client-") ? undefined : ratio(s.summary))),
    ...r.openLoopRows.map((s) => tableRow(s.label, s.summary, undefined)),
    "",
    "Targets (issue 18; 2 cores, everything local, same rounds):",
    ...targetLines(get),
    ...(r.drivers ? ["", ...r.drivers] : []),
  ];
  if (r.redis) {
    const { monitor, a, c, memory } = r.redis;
    lines.push(
      "",
      `Redis during (a): ${fmt(a.scripts, 2)} EVALSHA + ${fmt(a.other, 2)} other commands per request ` +
        `(INFO commandstats; the script itself runs ${fmt(a.internal, 1)} commands inside Redis per request); ` +
        `during (c): ${fmt(c.scripts, 2)} + ${fmt(c.other, 2)}. Round trips per request (MONITOR, ${r.settings.monitorRequests} ` +
        `sequential requests each): ${fmt(monitor.a, 2)} (a), ${fmt(monitor.aScoped, 2)} (a-scoped), ${fmt(monitor.c, 2)} (c), ${fmt(monitor.d, 2)} (d).`,
      "",
      `Limiter memory per key at 100,000/day: ${fmt(memory.bytes)} bytes after ${fmt(memory.admitted)} admitted requests ` +
        `(minute hash ${fmt(memory.minuteBytes)} B with ${memory.minuteFields} fields, day hash ${fmt(memory.dayBytes)} B with ` +
        `${memory.dayFields} fields, ${memory.encoding}).`,
    );
  }
  lines.push(
    "",
    "Notes: (c) is an authenticated request to a /v1 path no route serves: it runs everything of (a) up to and including " +
      "the guard (request id, access log and metrics, JWT cache, the quota, rate-limit headers) and ends in the 404 Error " +
      "body, never reaching gRPC. (b), (e) and (f) have the gateway's Express settings (no ETag, no X-Powered-By) and answer " +
      "the same bytes as (a). (e) is what a first Express handler in front of the pet service looks like (proto-loader " +
      "client, the gateway's JSON writer); (f) is the transport floor of any Express front: one grpc-js call whose bytes " +
      "are neither encoded nor decoded. (g) and (h) send a pre-encoded request over one HTTP/2 connection: the pet " +
      "service's own cost without a gateway. Half-peak rows: (b)'s median peak ÷ 2 (and, for context, (a)'s own) offered " +
      `open-loop at a constant rate (a request due every 1/rate s over ${r.settings.connections} keep-alive connections, ` +
      "latency counted from when it was due, so queueing is included; the load generator is the bench process). " +
      `Limiter memory: a Business key's ${fmt(r.settings.memoryHits)} requests spread evenly over one simulated day through ` +
      "the Redis store with an injected clock (same Lua script), then MEMORY USAGE of its two window hashes.",
    ...r.notMeasured.map((n) => `\nNot measured here: ${n}`),
  );
  return lines.filter((l, i) => l !== "" || lines[i - 1] !== "").join("\n");
}

function targetLines(get: (key: string) => Summary | undefined): string[] {
  const lines: string[] = [];
  const line = (pass: boolean, text: string) => lines.push(`- ${ok(pass)} ${text}`);
  const missing = (text: string, why: string) => lines.push(`- ❌ ${text}: not measured (${why})`);
  const go = get("i");
  for (const key of ["a", "a-mem"]) {
    const s = get(key);
    if (!s) continue;
    const text = `gateway CPU per GET ≤ ${GATEWAY_VS_GO} × grpc-gateway's (aim 0.5×), (${key})`;
    if (!go) missing(text, "no grpc-gateway front here; see Notes");
    else {
      const x = (s.cpu.front ?? NaN) / (go.cpu.front ?? NaN);
      line(x <= GATEWAY_VS_GO, `${text}: ${fmt(s.cpu.front ?? NaN)} vs ${fmt(go.cpu.front ?? NaN)} µs = ${fmt(x, 2)}×`);
    }
  }
  const [redis, memory] = [get("a"), get("a-mem")];
  if (redis && memory) {
    const extra = (redis.cpu.front ?? NaN) - (memory.cpu.front ?? NaN);
    line(extra <= REDIS_EXTRA_US, `Redis path ≤ memory path + ${REDIS_EXTRA_US} CPU-µs (gateway): ${fmt(redis.cpu.front ?? NaN)} vs ${fmt(memory.cpu.front ?? NaN)} µs (${extra >= 0 ? "+" : ""}${fmt(extra)})`);
  }
  const scoped = get("a-scoped");
  // Issue 39: scopes and allowed networks are decided from the key's state in memory, no I/O.
  if (redis && scoped) lines.push(`- reported: (a-scoped), a key with scopes and allowed networks, over (a): ${over(scoped, redis).text}`);
  const noUsage = get("a-no-usage");
  // Issue 40: counting each key's requests for the usage history is in memory, reported from a timer.
  if (redis && noUsage) lines.push(`- reported: (a), usage counted and reported, over (a-no-usage), USAGE_REPORTING=off: ${over(redis, noUsage).text}`);
  const [pet, floor] = [get("g"), get("k")];
  if (pet && floor) {
    const x = (pet.cpu.pet ?? NaN) / (floor.cpu.pet ?? NaN);
    line(x <= PET_VS_FLOOR, `pet service ListPets(20) ≤ ${PET_VS_FLOOR} × the fixed-reply floor (aim 2×): (g) ${fmt(pet.cpu.pet ?? NaN)} vs (k) ${fmt(floor.cpu.pet ?? NaN)} µs = ${fmt(x, 2)}×`);
  }
  for (const key of ["a", "a-mem"]) {
    const s = get(key);
    if (!s) continue;
    const text = `full-path throughput ≥ ${THROUGHPUT_VS_GO} × grpc-gateway's, (${key})`;
    if (!go) missing(text, "no grpc-gateway front here; see Notes");
    else line(s.rps / go.rps >= THROUGHPUT_VS_GO, `${text}: ${fmt(s.rps)} vs ${fmt(go.rps)} req/s = ${fmt(s.rps / go.rps, 2)}×`);
  }
  lines.push("", "Tracing and TLS on the hop (issue 21), CPU-µs per request of the gateway + the pet service:");
  hopLines(get, (key) => key, "at the peak", line, lines);
  hopLines(get, atRateKey, "at one offered rate", line, lines);
  const base = get("a-mem@base");
  if (memory && base) lines.push(`- reported: (a-mem) over the compared checkout's (a-mem@base): ${over(memory, base).text}`);
  return lines;
}

// Rounds alternate, so each round's difference is a pair run minutes apart at most; the median of
// those pairs is steadier on a shared machine than the difference of the rows' medians.
const hopUs = (run: Run) => {
  const { front = NaN, pet = NaN } = cpuByKind(run);
  return front + pet;
};
function over(s: Summary, than: Summary): { us: number; text: string } {
  const pairs = s.runs.map((run, i) => hopUs(run) - hopUs(than.runs[i]!));
  const signed = (d: number) => `${d >= 0 ? "+" : ""}${fmt(d)}`;
  return { us: median(pairs), text: `${signed(median(pairs))} µs (round by round ${pairs.map(signed).join(", ")})` };
}

/** Issue 21's differences, measured one way (`where`): the rows' keys are `keyOf` the hop keys. */
function hopLines(get: (key: string) => Summary | undefined, keyOf: (key: string) => string, where: string, line: (pass: boolean, text: string) => void, lines: string[]): void {
  const [unset, disabled, sampled] = ["a-unset", "a-notrace", "a-otel1"].map((k) => get(keyOf(k)));
  if (unset && disabled) lines.push(`- reported, ${where}: tracing unset (a-unset) over tracing disabled (a-notrace): ${over(unset, disabled).text}`);
  for (const [than, name] of [[disabled, "tracing disabled (a-notrace)"], [unset, "tracing unset (a-unset)"]] as const) {
    if (!sampled || !than) continue;
    const { us, text } = over(sampled, than);
    line(us <= TRACING_1PCT_US, `${where}, tracing on, 1 % sampled (a-otel1) ≤ +${TRACING_1PCT_US} µs over ${name}: ${text}`);
  }
  const reported: [string, string][] = [
    ["a-otel100", "tracing on, every request sampled and exported (a-otel100)"],
    ["a-tls", "mTLS on the hop, tracing unset (a-tls)"],
  ];
  for (const [key, what] of unset ? reported : []) {
    const s = get(keyOf(key));
    if (s) lines.push(`- reported, ${where}: ${what} over (a-unset): ${over(s, unset!).text}`);
  }
}
