/**
 * `npm run bench:hop`: what tracing costs per request, measured so that a difference of a few
 * CPU-µs shows. Each round starts a fresh gateway and pet service (SQLite, memory limiter,
 * LOG_LEVEL=info) per configuration, in a rotating order, warms them up, then offers all of them
 * the same constant rate at the same time (open loop, GET /v1/pets?limit=20) and measures the CPU
 * (utime + stime from /proc) each process used per request served. One configuration is tracing
 * unset with a client that sends a `traceparent` (as a traced caller or an ingress does): what
 * continuing a trace costs without an endpoint.
 *
 * Why: the same configuration in two stacks started once differed by up to 15–40 CPU-µs per
 * request for the whole run (an A/A test; which processes got which code from V8 and where), which
 * alternating rounds cannot remove; fresh processes every round turn that into noise that the
 * rounds average out (A/A: +1, rounds −10 to +14). Running side by side puts every configuration
 * under the same moment of a shared host.
 *
 * Flags: --rate R (per configuration, 400 req/s) --rounds N (10) --duration S (10) --warmup S (10)
 * --threads (a second table: each process's CPU per request by kind of thread, from
 * /proc/<pid>/task: the event loop, V8's helpers, the thread pool, the exporter's worker)
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startOtlpReceiver } from "../testkit/otlp-receiver.ts";
import { getOrCreate } from "../lib/get-or-create.ts";
import { threadCpuMicros } from "../testkit/cpu.ts";
import { fmt, median, today } from "../testkit/stats.ts";
import { openLoop, type HttpTarget } from "./load.ts";
import { log, stopAll } from "./processes.ts";
import { machine } from "./report.ts";
import { roundOrder } from "./scenario.ts";
import { startSqliteStack, tracedEnv } from "./stack.ts";
import { createKey, startKeyServiceProc } from "./key-service.ts";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "400" },
    rounds: { type: "string", default: "10" },
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "10" },
    threads: { type: "boolean", default: false },
  },
});
const [rate, rounds, duration, warmup] = [values.rate, values.rounds, values.duration, values.warmup].map(Number) as [number, number, number, number];

const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-hop-"));
const keyService = await startKeyServiceProc({ dir, name: "key-service", logLevel: "info" });
const auth = { authorization: `Bearer ${(await createKey(keyService, { plan: "enterprise", perMinute: 1e9, perDay: 1e9, name: "bench" })).key}` };
const sink = await startOtlpReceiver({ decode: false });

/** An unsampled client trace, for the row where the client sends one. */
const CLIENT_TRACEPARENT = { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" };

/** Both processes get the same variables; `client`: headers the load generator adds. */
const CONFIGURATIONS: readonly { key: string; label: string; env: Record<string, string>; client?: Record<string, string> }[] = [
  { key: "unset", label: "tracing unset (the default; no traceparent sent)", env: {} },
  { key: "unset+tp", label: "tracing unset, the client sends an unsampled `traceparent` (both processes continue it: ids, logged and propagated)", env: {}, client: CLIENT_TRACEPARENT },
  { key: "disabled", label: "tracing disabled (`OTEL_SDK_DISABLED=true`)", env: { OTEL_SDK_DISABLED: "true" } },
  { key: "ids", label: "endpoint set, `always_off`: every request gets ids, logged and propagated; nothing recorded", env: { ...tracedEnv(sink.url, "0"), OTEL_TRACES_SAMPLER: "always_off" } },
  { key: "1%", label: "tracing on, `parentbased_traceidratio` 0.01, exported (OTLP/HTTP protobuf to a local sink)", env: tracedEnv(sink.url, "0.01") },
];

let started = 0;
async function startStack({ env, client }: (typeof CONFIGURATIONS)[number]) {
  const { pet, front } = await startSqliteStack({ dir, keys: keyService.gatewayEnv, name: `stack-${++started}`, auth, seed: 20, logLevel: "info", petEnv: env, gatewayEnv: env });
  const target: HttpTarget = { url: `${front.address}/v1/pets?limit=20`, headers: { ...auth, ...client }, status: 200 };
  return { target, pids: { gateway: front.proc.pid, pet: pet.proc.pid }, stop: () => Promise.all([front.proc.stop(), pet.proc.stop()]) };
}

type Cpu = { gateway: number; pet: number };
const perRound = new Map<string, Cpu[]>(CONFIGURATIONS.map((c) => [c.key, []]));
/** --threads: per configuration, "process: thread kind" → CPU-µs per request, one per round. */
const perThread = new Map<string, Map<string, number[]>>(CONFIGURATIONS.map((c) => [c.key, new Map()]));
type Pids = Record<"gateway" | "pet", number>;
const threadsOf = (pids: Pids) => Object.entries(pids).map(([proc, pid]) => ({ proc, pid, cpu: threadCpuMicros(pid) }));
function recordThreads(key: string, before: ReturnType<typeof threadsOf>, requests: number): void {
  for (const { proc, pid, cpu } of before) {
    for (const [kind, us] of threadCpuMicros(pid)) {
      getOrCreate(perThread.get(key)!, `${proc}: ${kind}`, () => []).push((us - (cpu.get(kind) ?? 0)) / requests);
    }
  }
}
try {
  for (let round = 1; round <= rounds; round++) {
    const stacks = new Map<string, Awaited<ReturnType<typeof startStack>>>();
    for (const c of roundOrder(CONFIGURATIONS, round)) stacks.set(c.key, await startStack(c));
    const offer = (seconds: number) =>
      Promise.all(CONFIGURATIONS.map((c) => openLoop(stacks.get(c.key)!.target, rate, { durationSeconds: seconds, connections: 8, pids: stacks.get(c.key)!.pids, dir })));
    await offer(warmup);
    const threadsBefore = values.threads ? CONFIGURATIONS.map((c) => threadsOf(stacks.get(c.key)!.pids)) : [];
    const runs = await offer(duration);
    runs.forEach((run, i) => {
      if (run.failures) throw new Error(`${CONFIGURATIONS[i]!.key}: ${run.failures} failed requests of ${run.requests}`);
      perRound.get(CONFIGURATIONS[i]!.key)!.push({ gateway: run.cpuPerRequest.gateway!, pet: run.cpuPerRequest.pet! });
      if (values.threads) recordThreads(CONFIGURATIONS[i]!.key, threadsBefore[i]!, run.requests);
    });
    log(`round ${round}: ${CONFIGURATIONS.map((c, i) => `${c.key} ${fmt(runs[i]!.cpuPerRequest.gateway! + runs[i]!.cpuPerRequest.pet!)}`).join(", ")} CPU-µs/req`);
    await Promise.all([...stacks.values()].map((s) => s.stop()));
  }
} finally {
  await stopAll();
  await sink.close();
  rmSync(dir, { recursive: true, force: true });
}

const both = (c: Cpu) => c.gateway + c.pet;
/** The median of the rounds' paired differences, and their range. */
function over(key: string, base: string): string {
  const diffs = perRound.get(key)!.map((c, i) => both(c) - both(perRound.get(base)![i]!));
  const signed = (n: number) => `${n >= 0 ? "+" : "−"}${fmt(Math.abs(n))}`;
  return `${signed(median(diffs))} (${signed(Math.min(...diffs))} to ${signed(Math.max(...diffs))})`;
}
console.log(
  [
    `Tracing's cost per request, side by side (npm run bench:hop): ${fmt(rate)} req/s offered to each configuration at once, open loop, ` +
      `${rounds} rounds × ${duration} s, fresh processes every round; CPU-µs per request, medians over the rounds; "over" columns: the median of the rounds' paired differences (their range). ${today()}.`,
    "",
    machine([]),
    "",
    "| configuration | gateway | pet service | both | over unset | over disabled |",
    "|---|---:|---:|---:|---:|---:|",
    ...CONFIGURATIONS.map((c) => {
      const cpu = perRound.get(c.key)!;
      const m = (f: (x: Cpu) => number) => fmt(median(cpu.map(f)));
      return `| ${c.label} | ${m((x) => x.gateway)} | ${m((x) => x.pet)} | ${m(both)} | ${c.key === "unset" ? "—" : over(c.key, "unset")} | ${c.key === "disabled" ? "—" : over(c.key, "disabled")} |`;
    }),
  ].join("\n"),
);
if (values.threads) {
  const rows = [...new Set([...perThread.values()].flatMap((m) => [...m.keys()]))].sort();
  const cell = (key: string, row: string) => {
    const rounds = perThread.get(key)!.get(row);
    return rounds ? fmt(median(rounds)) : "—";
  };
  console.log(
    [
      "",
      "By kind of thread (CPU-µs per request, medians over the rounds; main: the event loop, V8Worker: V8's compiler and collector helpers, libuv-worker: the thread pool, WorkerThread: the OTLP exporter's worker):",
      "",
      `| process: thread | ${CONFIGURATIONS.map((c) => c.key).join(" | ")} |`,
      `|---|${CONFIGURATIONS.map(() => "---:").join("|")}|`,
      ...rows.filter((row) => CONFIGURATIONS.some((c) => median(perThread.get(c.key)!.get(row) ?? [0]) > 0)).map((row) => `| ${row} | ${CONFIGURATIONS.map((c) => cell(c.key, row)).join(" | ")} |`),
    ].join("\n"),
  );
}
