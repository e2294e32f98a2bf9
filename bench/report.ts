import { writeFileSync } from "node:fs";
import os from "node:os";
import type { Run } from "./load.ts";
import { fmt, median, ms } from "../testkit/stats.ts";

/** The benchmark's markdown: one table row per scenario (medians over rounds), and the results page it goes to. */

/** The processes whose CPU a row shows, in column order. */
export const CPU_COLUMNS = [
  { name: "front", title: "front CPU-µs/req" },
  { name: "pet", title: "pet service CPU-µs/req" },
  { name: "redis", title: "Redis CPU-µs/req" },
  { name: "load", title: "load gen CPU-µs/req" },
  { name: "postgres", title: "PostgreSQL CPU-µs/req" },
] as const;

export type CpuName = (typeof CPU_COLUMNS)[number]["name"];

export interface Summary {
  rps: number;
  p50: number;
  p99: number;
  /** Median CPU-µs per request of each process (replicas of one kind added up: "pet:0" + "pet:1" = "pet"). */
  cpu: Partial<Record<CpuName, number>>;
  runs: Run[];
}

/** One row of the table: a scenario's (or an open-loop run's) key, label and summary over the rounds. */
export interface ReportRow {
  key: string;
  label: string;
  summary: Summary;
}

/** One run's CPU-µs per request by kind of process (replicas of one kind added up: "pet:0" + "pet:1" = "pet"). */
export function cpuByKind(run: Run): Record<string, number> {
  const byKind: Record<string, number> = {};
  for (const [name, us] of Object.entries(run.cpuPerRequest)) {
    const kind = name.split(":")[0]!;
    byKind[kind] = (byKind[kind] ?? 0) + us;
  }
  return byKind;
}

export function summarize(runs: Run[]): Summary {
  const perRun = runs.map(cpuByKind);
  const names = new Set(perRun.flatMap((k) => Object.keys(k)));
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    cpu: Object.fromEntries([...names].map((n) => [n, median(perRun.map((k) => k[n] ?? 0))])),
    runs,
  };
}

/** One run for the progress log: throughput, latency and each kind of process's CPU per request. */
export function runLine(run: Run): string {
  const cpu = Object.entries(cpuByKind(run)).map(([kind, us]) => `${kind} ${fmt(us)}`).join(", ");
  return `${fmt(run.rps)} req/s, p50 ${ms(run.p50)} ms, p99 ${ms(run.p99)} ms; CPU-µs/req ${cpu}`;
}

export const TABLE_HEADER = [
  `| Scenario | req/s (median) | p50 ms | p99 ms | vs (b) | ${CPU_COLUMNS.map((c) => c.title).join(" | ")} |`,
  `|---|---:|---:|---:|---:|${CPU_COLUMNS.map(() => "---:").join("|")}|`,
];

/** One table row; `vs` is the ratio to bare Express's req/s ("—" for none). */
export function tableRow(label: string, s: Summary, vs: number | undefined): string {
  const cpu = CPU_COLUMNS.map((c) => (s.cpu[c.name] === undefined ? "—" : fmt(s.cpu[c.name]!)));
  return `| ${label} | ${fmt(s.rps)} | ${ms(s.p50)} | ${ms(s.p99)} | ${vs === undefined ? "—" : `${fmt(vs, 2)}×`} | ${cpu.join(" | ")} |`;
}

export const ok = (pass: boolean): string => (pass ? "✅" : "❌");

/**
 * The results page `npm run bench` writes (docs/benchmarks.md), whole: a file of its own, so a run
 * never touches README.md or the hand-written docs, and the page is always one run's figures.
 */
export function writeResultsPage(file: string, intro: string, markdown: string): void {
  const page = [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (bench/run.ts): the next full run replaces this whole file, so edit the",
    "bench, not this page. What the figures mean, what was concluded from them and how to measure",
    "more: [performance.md](performance.md).",
    "",
    "- [How this run was made](#how-this-run-was-made)",
    "- [Latest run](#latest-run)",
    "",
    "## How this run was made",
    "",
    intro,
    "",
    "## Latest run",
    "",
    markdown,
    "",
  ];
  writeFileSync(file, page.join("\n"));
}

/** CPU model, cores, memory, kernel, Node, and the versions the caller adds (Redis, wrk, …). */
export function machine(extra: string[]): string {
  const cpus = os.cpus();
  return [
    `${cpus[0]?.model.trim() ?? "?"}, ${cpus.length} cores, ${fmt(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    `Node ${process.version}`,
    ...extra,
  ].join(", ");
}
