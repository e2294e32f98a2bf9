import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** CI's smoke of `npm run bench:paging`: it still builds its table and walks to the last page. Nothing about speed. */
it("runs bench/paging-depth.ts on a small table to the end and prints the first and the last page", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["bench/paging-depth.ts", "--pets", "3000", "--rounds", "2", "--calls", "10"],
    { cwd: ROOT, timeout: 60_000 },
  );
  expect(stdout).toContain("| page | gRPC latency µs/call | CPU-µs/call (client + server) |");
  expect(stdout).toMatch(/^\| page 1 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \|$/m);
  expect(stdout).toMatch(/^\| page 30 \| [\d,]+ \| [\d,]+ \| [\d,]+ \| [\d,]+ \|$/m);
}, 90_000);
