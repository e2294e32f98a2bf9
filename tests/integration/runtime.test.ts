import { execFile, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../testkit/net.ts";

// Every process of ours runs on the runtime the project brings (the registry's `node` package,
// Node 26 LTS), whatever node the machine has first on its PATH (Node 20 on this machine kind):
// through npm, as a user runs them.
const ROOT = path.resolve(import.meta.dirname, "../..");
const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { engines: { node: string }; dependencies: { node: string } };
const pinned = `v${pkg.dependencies.node}`;

/**
 * The environment of a user's shell: no npm_* settings and no node_modules/.bin on PATH (npm adds
 * it for the scripts it runs, this test's runner among them), so `node` is the machine's own. Each
 * node process then reports its version and script on stderr as it starts (an --import of NODE_OPTIONS,
 * which every node started under it inherits): npm's own node too, told apart by its script.
 */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== "REDIS_URL" && name !== "NODE_OPTIONS"));
  env.PATH = (env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => !dir.includes(`node_modules${path.sep}.bin`))
    .join(path.delimiter);
  const report = "process.stderr.write(`runtime ${process.version} ${process.argv[1]}\\n`)";
  return { ...env, NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(report)}`, ...extra };
}

/** The version each script's node reported, by the script's path from the repository root. */
function runtimes(stderr: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [, version, script] of stderr.matchAll(/^runtime (v\S+) (.+)$/gm)) {
    const relative = path.relative(ROOT, path.resolve(ROOT, script!));
    if (!relative.startsWith("..")) found[relative] = version!;
  }
  return found;
}

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe("the runtime", { timeout: 90_000 }, () => {
  it("is Node 26 LTS everywhere the project names it: the node package it brings, engines, .nvmrc", () => {
    expect(pinned).toMatch(/^v26\.\d+\.\d+$/);
    expect(pkg.engines.node).toBe(">=26");
    expect(readFileSync(path.join(ROOT, ".nvmrc"), "utf8").trim()).toBe("26");
  });

  it("runs npm start, the key service, the gateway and the pet service (their writer threads too) on it, and npm start prints it", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "petstore-runtime-"));
    dirs.push(dir);
    const machineNode = execFileSync("node", ["--version"], { env: userEnv({ NODE_OPTIONS: "" }), encoding: "utf8" }).trim();
    const child = spawn("npm", ["start"], {
      cwd: ROOT,
      env: userEnv({
        GATEWAY_PORT: String(await freePort()),
        PET_SERVICE_PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
        PETS_DB: path.join(dir, "pets.sqlite"),
        KEYS_DIR: path.join(dir, "keys"),
        KEYS_DB: path.join(dir, "keys.sqlite"),
        KEYS_PORT: String(await freePort()),
        LOG_LEVEL: "warn",
      }),
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group: npm, its shell, start.ts and both services stop together.
      detached: true,
    });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    const exited = new Promise((resolve) => child.on("exit", resolve));
    try {
      const deadline = Date.now() + 60_000;
      while (!stdout.includes("Ctrl-C stops") && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(stdout, stderr).toContain("Ctrl-C stops");
      expect(/Node: +(v\S+)/.exec(stdout)?.[1]).toBe(pinned);
      expect(runtimes(stderr), `the machine's node is ${machineNode}`).toEqual({
        [path.join("scripts", "start.ts")]: pinned,
        [path.join("keys", "main.ts")]: pinned,
        // The key registry's SQLite writer thread.
        [path.join("keys", "registry", "sqlite", "writer-worker.ts")]: pinned,
        [path.join("gateway", "main.ts")]: pinned,
        [path.join("pet-service", "main.ts")]: pinned,
        // The SQLite writer's thread, with its own module entry.
        [path.join("pet-service", "store", "sqlite", "writer-worker.ts")]: pinned,
      });
    } finally {
      process.kill(-child.pid!, "SIGINT");
      await exited;
    }
  });

  it("runs the tools on it: npm run keys and npm run pets-db", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "petstore-runtime-tools-"));
    dirs.push(dir);
    const npm = (args: string[]) =>
      new Promise<string>((resolve) =>
        execFile("npm", args, { cwd: ROOT, env: userEnv({ KEYS_DIR: path.join(dir, "keys") }) }, (_err, _stdout, stderr) => resolve(stderr)),
      );
    expect(runtimes(await npm(["run", "-s", "keys", "--", "help"]))).toEqual({ [path.join("tools", "keys.ts")]: pinned });
    expect(runtimes(await npm(["run", "-s", "pets-db", "--", "help"]))).toEqual({ [path.join("tools", "pets-db.ts")]: pinned });
  });
});
