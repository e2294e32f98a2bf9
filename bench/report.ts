import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Run } from "./load.ts";
import { ROOT } from "./processes.ts";
import { fmt, median, ms } from "../testkit/stats.ts";

/** The benchmark's markdown: one table row per scenario (medians over rounds), and README's Benchmarks section. */

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

/** Replaces README.md's "## Benchmarks" section (up to the next "## ") with `intro` and `markdown`. */
export function writeReadmeSection(intro: string, markdown: string): void {
  const file = path.join(ROOT, "README.md");
  const readme = readFileSync(file, "utf8");
  const section = `## Benchmarks\n\n${intro}\n\n${markdown}\n`;
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

/** CPU model, cores, memory, kernel, Node, and the versions the caller adds (Redis, wrk, …). */
export function machine(extra: string[]): string {
  const cpus = os.cpus();
  return [
    `${cpus[0]?.model.trim() ?? "?"}, ${cpus.length} cores, ${fmt(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    `Node ${process.version}`,
    ...extra,
  ].join(", ");
}
