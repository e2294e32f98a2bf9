import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** CI's smoke of `npm run bench:limiter-latency`: it still drives every load and prints a row for each. Nothing about speed. */
it("runs bench/limiter-latency.ts --smoke to the end and prints the latency of every load", async () => {
  // Not our REDIS_URL, PETS_DB, …: the bench starts and configures everything itself.
  const env = Object.fromEntries(["PATH", "HOME", "TMPDIR", "LANG"].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])));
  const { stdout } = await promisify(execFile)(process.execPath, ["bench/limiter-latency.ts", "--smoke"], { cwd: ROOT, env, timeout: 100_000 });
  expect(stdout).toContain("| load | round | decisions | p50 ≤ | p99 ≤ | p99.9 ≤ | largest in |");
  for (const load of ["wrk", "wrk×2", "bursts"]) expect(stdout).toMatch(new RegExp(`^\\| ${load} \\| 1 \\| [1-9]\\d* \\| [\\d.]+ ms \\|`, "m"));
}, 120_000);
