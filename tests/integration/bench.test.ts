import { spawn } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

// CI's smoke of `npm run bench`, `npm run bench:hop` and `npm run bench:logger`: each script still starts everything,
// drives every scenario and prints its table. Benchmarks are not timed tests: nothing here
// asserts anything about speed.

/** Runs a command (a bench script on this runtime, or npm as the docs show it) to its end: its exit code and output. */
async function runBench(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    // Not our REDIS_URL, PETS_DB, …: the bench starts and configures everything itself.
    env: Object.fromEntries(["PATH", "HOME", "TMPDIR", "LANG"].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(killer);
  return { code, stdout, stderr };
}

/** A file's bytes and modification time: what a run that leaves it alone leaves as it was. */
const snapshot = (file: string) => ({ text: readFileSync(path.join(ROOT, file), "utf8"), mtimeMs: statSync(path.join(ROOT, file)).mtimeMs });

it("runs `npm run bench -- --smoke` to the end, prints the table with every scenario, and writes neither README.md nor docs/benchmarks.md", async () => {
  const before = ["README.md", "docs/benchmarks.md"].map(snapshot);
  // As the docs show it: through npm, so the flags package.json's `bench` script adds are part of the run.
  const { code, stdout, stderr } = await runBench("npm", ["run", "bench", "--", "--smoke"], 140_000);
  expect(code, `bench exited with ${code}:\n${stderr}`).toBe(0);
  expect(["README.md", "docs/benchmarks.md"].map(snapshot)).toEqual(before);
  expect(stderr).toContain("docs/benchmarks.md left as it was: only a full run writes it");
  expect(stdout).toContain("| Scenario | req/s (median) | p50 ms | p99 ms | vs (b) |");
  for (const row of [
    "| (a) full path: GET /v1/pets?limit=20",
    // Issue 39: a key with scopes and allowed networks, in the same rounds.
    "| (a) full path with a key that has scopes",
    "| (b) bare Express: GET /v1/pets, the same bytes",
    "| (c) auth + limiter only: GET /v1/bench-noop",
    "| (d) POST /v1/pets",
    "| (a) full path at LOG_LEVEL=info",
    "| (b) at half peak:",
    "| (a) at half peak:",
    "| (a) at half its own peak:",
    // Issue 21's rows again at one offered rate, below every one's peak (bench/hop-at-rate.ts).
    "| (a-notrace) at ",
    "| (a-otel1) at ",
    "| (l) client CPU per unary ListPets(20), 4 in flight, against the fixed-bytes server (k): the thin unary client",
    "| (l) client CPU per unary ListPets(20), 4 in flight, against the fixed-bytes server (k): grpc-js as the gateway used it",
  ]) {
    expect(stdout).toContain(row);
  }
  expect(stdout).toMatch(/at one offered rate, tracing on, 1 % sampled \(a-otel1\) ≤ \+15 µs over tracing disabled \(a-notrace\): [+-][\d,.]+ µs/);
  expect(stdout).toMatch(/Round trips per request \(MONITOR, \d+ sequential requests each\): 1\.00 \(a\), 1\.00 \(a-scoped\), 1\.00 \(c\), 1\.00 \(d\)/);
  expect(stdout).toMatch(/reported: \(a-scoped\), a key with scopes and allowed networks, over \(a\): [+-][\d,.]+ µs/);
  expect(stdout).toMatch(/Limiter memory per key at 100,000\/day: [\d,]+ bytes/);
}, 150_000);

it("runs bench/hop-side-by-side.ts (npm run bench:hop) for one short round and prints a row per configuration, and per thread with --threads", async () => {
  const { code, stdout, stderr } = await runBench(process.execPath, ["bench/hop-side-by-side.ts", "--rounds", "1", "--duration", "1", "--warmup", "1", "--rate", "50", "--threads"], 80_000);
  expect(code, `bench:hop exited with ${code}:\n${stderr}`).toBe(0);
  expect(stdout).toContain("| configuration | gateway | pet service | both | over unset | over disabled |");
  for (const row of ["| tracing unset (the default", "| tracing unset, the client sends", "| tracing disabled (", "| endpoint set, `always_off`", "| tracing on, `parentbased_traceidratio` 0.01"]) {
    expect(stdout).toContain(row);
  }
  expect(stdout).toMatch(/\| tracing on, `parentbased_traceidratio` 0\.01[^|]*\| [\d,]+ \| [\d,]+ \| [\d,]+ \| [+−][\d,]+ \(/);
  // --threads: each process's event loop has a row with a figure for every configuration.
  expect(stdout).toContain("| process: thread | unset | unset+tp | disabled | ids | 1% |");
  for (const proc of ["gateway", "pet"]) expect(stdout).toMatch(new RegExp(`\\| ${proc}: main( \\| [\\d,]+){5} \\|`));
}, 90_000);

it("runs bench/log-destination.ts (npm run bench:logger) for one short round and prints a row per pace and destination", async () => {
  const { code, stdout, stderr } = await runBench(process.execPath, ["bench/log-destination.ts", "--rounds", "1", "--lines", "2000"], 60_000);
  expect(code, `bench:logger exited with ${code}:\n${stderr}`).toBe(0);
  expect(stdout).toContain("| pace | destination | lines/s | CPU-µs/line | writes/s | writes per 1,000 lines | bytes/write |");
  for (const pace of ["burst", "paced"]) {
    for (const destination of ["before: pino.destination, sonic-boom 4.2.1", "lib/log-destination.ts, sonic-boom 5.0.2"]) {
      expect(stdout).toMatch(new RegExp(`\\| ${pace} \\| ${destination.replace(/[.()]/g, "\\$&")}( \\| [\\d,.]+){5} \\|`));
    }
  }
}, 70_000);
