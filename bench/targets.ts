import type { CommandCounts, MemoryReport } from "./redis-stats.ts";
import { ok, TABLE_HEADER, tableRow, type Summary } from "./report.ts";
import { fmt, ms } from "../testkit/stats.ts";

/** The benchmark's report: the table, the targets of the CPU issue with ✅/❌, Redis figures and notes. */

export interface ReportInput {
  settings: { rounds: number; duration: number; connections: number; monitorRequests: number; memoryHits: number };
  scenarios: { key: string; label: string; summary: Summary }[];
  halfRows: { key: string; label: string; summary: Summary }[];
  redis?: { monitor: { a: number; c: number; d: number }; a: CommandCounts; c: CommandCounts; memory: MemoryReport };
  notMeasured: string[];
  machine: string;
  when: string;
}

/** Gateway CPU-µs per GET /v1/pets?limit=20 at LOG_LEVEL=info (aim: 300). */
const GATEWAY_CPU_US = 340;
/** Pet service CPU-µs per ListPets(20) (aim: 100). */
const PET_CPU_US = 130;
/** Tracing on at a 1 % sampler: CPU-µs per request over the same path with tracing unset, both processes together. */
const TRACING_CPU_US = 15;

export function benchReport(r: ReportInput): string {
  const get = (key: string) => [...r.scenarios, ...r.halfRows].find((s) => s.key === key)?.summary;
  const bare = get("b");
  const ratio = (s: Summary) => (bare ? s.rps / bare.rps : undefined);
  const lines = [
    `Settings: ${r.settings.rounds} round(s) × ${r.settings.duration} s per scenario, ${r.settings.connections} connections ` +
      `(wrk: one thread, keep-alive; h2load: one connection, that many streams), scenarios alternating within each round; ` +
      `medians over the rounds. CPU-µs/req: utime + stime from /proc of each process during the run ÷ requests served ` +
      `(front = the gateway or Express app under load). Everything at LOG_LEVEL=info. ${r.when}.`,
    "",
    `Machine: ${r.machine}.`,
    "",
    ...TABLE_HEADER,
    ...r.scenarios.map((s) => tableRow(s.label, s.summary, ["g", "h", "k"].includes(s.key) ? undefined : ratio(s.summary))),
    ...r.halfRows.map((s) => tableRow(s.label, s.summary, undefined)),
    "",
    "Targets (2 cores, everything local):",
    ...targetLines(r, get, ratio),
  ];
  if (r.redis) {
    const { monitor, a, c, memory } = r.redis;
    lines.push(
      "",
      `Redis during (a): ${fmt(a.scripts, 2)} EVALSHA + ${fmt(a.other, 2)} other commands per request ` +
        `(INFO commandstats; the script itself runs ${fmt(a.internal, 1)} commands inside Redis per request); ` +
        `during (c): ${fmt(c.scripts, 2)} + ${fmt(c.other, 2)}. Round trips per request (MONITOR, ${r.settings.monitorRequests} ` +
        `sequential requests each): ${fmt(monitor.a, 2)} (a), ${fmt(monitor.c, 2)} (c), ${fmt(monitor.d, 2)} (d).`,
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

function targetLines(
  r: ReportInput,
  get: (key: string) => Summary | undefined,
  ratio: (s: Summary) => number | undefined,
): string[] {
  const lines: string[] = [];
  const each = (keys: string[], line: (s: Summary, key: string) => string) => {
    for (const key of keys) {
      const s = get(key);
      if (s) lines.push(line(s, key));
    }
  };
  each(["a", "a-mem"], (s, key) =>
    `- ${ok((s.cpu.front ?? Infinity) <= GATEWAY_CPU_US)} gateway ≤ ${GATEWAY_CPU_US} CPU-µs per GET (aim 300), (${key}): ${fmt(s.cpu.front ?? NaN)} µs`,
  );
  each(["a", "a-mem"], (s, key) =>
    `- ${ok((s.cpu.pet ?? Infinity) <= PET_CPU_US)} pet service ≤ ${PET_CPU_US} CPU-µs per ListPets(20) (aim 100), in (${key}): ${fmt(s.cpu.pet ?? NaN)} µs`,
  );
  each(["a", "a-mem"], (s, key) => {
    const x = ratio(s) ?? NaN;
    return `- ${ok(x >= 0.36)} full path ≥ 0.36 × bare Express, (${key}): ${fmt(x, 2)}×`;
  });
  const goGateway = get("i");
  if (goGateway) {
    each(["a", "a-mem"], (s, key) => {
      const x = s.rps / goGateway.rps;
      return `- ${ok(x >= 0.85)} full path ≥ 0.85 × grpc-gateway (i), (${key}): ${fmt(x, 2)}×`;
    });
  } else lines.push("- ❌ full path ≥ 0.85 × grpc-gateway: not measured (no grpc-gateway front here; see Notes)");
  each(["c", "c-mem"], (s, key) => {
    const x = ratio(s) ?? NaN;
    return `- ${ok(x >= 0.8)} auth + limiter ≥ 0.8 × bare Express, (${key}): ${fmt(x, 2)}×`;
  });
  if (r.redis) {
    const { a, c, d } = r.redis.monitor;
    lines.push(`- ${ok([a, c, d].every((n) => n === 1))} exactly 1 Redis command per request: ${fmt(a, 2)} (a), ${fmt(c, 2)} (c), ${fmt(d, 2)} (d)`);
  }
  // The hop's options against (a-mem), which has neither tracing nor TLS: both processes' CPU per request.
  const plain = get("a-mem");
  const hop = (s: Summary) => (s.cpu.front ?? NaN) + (s.cpu.pet ?? NaN);
  const over = (s: Summary, than: Summary) => {
    const d = hop(s) - hop(than);
    return `${d >= 0 ? "+" : ""}${fmt(d)} µs (${fmt(hop(s))} vs ${fmt(hop(than))})`;
  };
  if (plain) {
    each(["a-otel1"], (s) => `- ${ok(hop(s) - hop(plain) <= TRACING_CPU_US)} tracing on, 1 % sampled: ≤ +${TRACING_CPU_US} CPU-µs per request (gateway + pet service) over (a-mem): ${over(s, plain)}`);
    each(["a-otel100"], (s) => `- reported: tracing on, every request sampled and exported, over (a-mem): ${over(s, plain)}`);
    each(["a-tls"], (s) => `- reported: mTLS on the hop, over plaintext (a-mem): ${over(s, plain)}`);
    each(["a-mem@base"], (base) => `- reported: (a-mem), tracing unset, over the compared checkout's: ${over(plain, base)}`);
  }
  const aHalf = get("aHalf");
  const bHalf = get("bHalf");
  if (aHalf && bHalf) {
    const gap = aHalf.p99 - bHalf.p99;
    lines.push(
      `- ${ok(gap <= 5)} p99 at half of bare Express's peak within 5 ms of bare Express: ${ms(aHalf.p99)} vs ${ms(bHalf.p99)} ms (${gap >= 0 ? "+" : ""}${ms(gap)} ms)`,
    );
  }
  return lines;
}
