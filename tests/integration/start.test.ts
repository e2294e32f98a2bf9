import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { loadGatewayConfig, shutdownDeadlineMs } from "../../gateway/config.ts";
import { freePort } from "../../testkit/net.ts";
import { checkHealth } from "../../testkit/pet-service.ts";
import { closeReader, exitWithin } from "../../testkit/process.ts";
import { until } from "../../testkit/until.ts";
import { parseExposition } from "../../testkit/promql.ts";

// `npm start` as a new user runs it: both processes, a demo key, a curl line that works, Ctrl-C.
const ROOT = path.resolve(import.meta.dirname, "../..");
let dir: string | undefined;

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("starts both processes, prints a working curl line and the docs URL, and stops both cleanly on Ctrl-C", async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "petstore-start-"));
  const [gatewayPort, petPort, petMetricsPort] = [await freePort(), await freePort(), await freePort()];
  const { REDIS_URL: _never, ...inherited } = process.env;
  const child = spawn(process.execPath, ["scripts/start.ts"], {
    cwd: ROOT,
    env: {
      ...inherited,
      GATEWAY_PORT: String(gatewayPort),
      PET_SERVICE_PORT: String(petPort),
      METRICS_PORT: String(petMetricsPort),
      PETS_DB: path.join(dir, "pets.sqlite"),
      KEYS_DIR: path.join(dir, "keys"),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));

  const deadline = Date.now() + 30_000;
  while (!stdout.includes("Ctrl-C stops") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(stdout).toContain(`Base URL: http://localhost:${gatewayPort}/v1`);

  // README's first screen shows exactly this output (only the key, the port and the key file differ).
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const shown = /`npm start` prints something like:\n\n```\n([\s\S]*?)```/.exec(readme)?.[1];
  const normalize = (text: string) =>
    text
      .replace(/eyJ[A-Za-z0-9_.-]*/g, "KEY")
      .replace(/localhost:[0-9]+/g, "localhost:PORT")
      .replace(/saved in [^)]+\)/, "saved in FILE)")
      .replace(/Node: +v[0-9.]+/, "Node: VERSION")
      .trim()
      .split("\n")
      .map((line) => line.trimEnd());
  expect(shown).toBeDefined();
  expect(normalize(stdout)).toEqual(normalize(shown!));

  // The printed docs URL serves the reference page (tests/integration/gateway/ops/docs.test.ts opens it in a browser).
  const docsUrl = /Docs: +(\S+)/.exec(stdout)?.[1];
  expect(docsUrl).toBe(`http://localhost:${gatewayPort}/docs`);
  const docs = await fetch(docsUrl!.replace("localhost", "127.0.0.1"));
  expect(docs.status).toBe(200);
  expect(docs.headers.get("content-type")).toMatch(/^text\/html/);
  expect(await docs.text()).toContain('<div id="swagger-ui">');

  // Run the printed curl line's request: the key and URL it shows work as printed.
  const curl = /curl -s -H "Authorization: Bearer ([^"]+)" (\S+)/.exec(stdout);
  expect(curl).not.toBeNull();
  const res = await fetch(curl![2]!.replace("localhost", "127.0.0.1"), { headers: { Authorization: `Bearer ${curl![1]}` } });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual([]);

  // Both processes run on the project's runtime (Node >= 26), whatever node the machine has: each
  // says which in its own metrics, and npm start prints the same version.
  const printed = /Node: +v(\d+)\.(\d+)\.(\d+)/.exec(stdout);
  expect(Number(printed?.[1])).toBeGreaterThanOrEqual(26);
  for (const metrics of [`http://127.0.0.1:${gatewayPort}/metrics`, `http://127.0.0.1:${petMetricsPort}/metrics`]) {
    const samples = parseExposition(await (await fetch(metrics)).text()).filter((s) => s.name === "nodejs_version_info");
    expect(samples.map((s) => s.labels.version)).toEqual([`v${printed![1]}.${printed![2]}.${printed![3]}`]);
  }

  child.kill("SIGINT");
  expect(await exited).toBe(0);
  await expect(fetch(`http://127.0.0.1:${gatewayPort}/healthz`)).rejects.toThrow();
});

it("with stdout's reader gone before the banner (npm start | head), runs on, and Ctrl-C still stops both processes within their deadlines", async () => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), "petstore-start-gone-"));
  const [gatewayPort, petPort] = [await freePort(), await freePort()];
  const { REDIS_URL: _never, ...inherited } = process.env;
  // A process group of its own, so whatever is left of it can be killed afterwards.
  const child = spawn(process.execPath, ["scripts/start.ts"], {
    cwd: ROOT,
    env: { ...inherited, GATEWAY_PORT: String(gatewayPort), PET_SERVICE_PORT: String(petPort), PETS_DB: path.join(cwd, "pets.sqlite"), KEYS_DIR: path.join(cwd, "keys") },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await closeReader(child.stdout);
    await until("the gateway is ready", async () => (await fetch(`http://127.0.0.1:${gatewayPort}/readyz`).catch(() => undefined))?.status === 200, 60_000, 200);
    // The banner comes after readiness: give it the moment to be written, and refused.
    await until("npm start has said its banner could not be shown", () => stderr.includes("npm start: cannot write to stdout (EPIPE)"), 15_000);
    expect(child.exitCode).toBeNull();

    const ended = exitWithin(child, shutdownDeadlineMs(loadGatewayConfig({})) + 5_000);
    child.kill("SIGINT");
    expect(await ended).toEqual({ code: 0, signal: null });
    await expect(fetch(`http://127.0.0.1:${gatewayPort}/healthz`)).rejects.toThrow();
    await expect(checkHealth(`127.0.0.1:${petPort}`, "", { timeoutMs: 1_000 })).rejects.toThrow();
  } finally {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Nothing of it left.
    }
    await rm(cwd, { recursive: true, force: true });
  }
}, 120_000);

it("in a terminal, shows readable log lines (time, level, process, message) instead of JSON, and stops on Ctrl-C", async () => {
  const cwd = await mkdtemp(path.join(os.tmpdir(), "petstore-start-tty-"));
  try {
    const { REDIS_URL: _never, ...inherited } = process.env;
    // A real pseudo-terminal: util-linux's script runs npm start's script on one, as a terminal would.
    // exec: script runs the command through $SHELL, and dash (CI's /bin/sh) stays as the parent
    // and dies of the terminal's SIGINT itself (exit 130), whatever the script does.
    const child = spawn("script", ["-q", "-e", "-c", `exec '${process.execPath}' scripts/start.ts`, "/dev/null"], {
      cwd: ROOT,
      env: {
        ...inherited,
        GATEWAY_PORT: String(await freePort()),
        PET_SERVICE_PORT: String(await freePort()),
        PETS_DB: path.join(cwd, "pets.sqlite"),
        KEYS_DIR: path.join(cwd, "keys"),
        LOG_LEVEL: "info",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // A loaded CI machine can take a while to start both processes; the terminal must show the
    // banner before Ctrl-C is typed, or this would test an interrupted start.
    const deadline = Date.now() + 60_000;
    while (!output.includes("Ctrl-C stops") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(output).toContain("Ctrl-C stops");
    // Ctrl-C typed on the terminal: SIGINT to npm start and both processes.
    child.stdin.write("\x03");
    expect(await exited).toBe(0);
    const lines = output.replace(/\x1b\[[0-9;]*m/g, "").split(/\r?\n/);
    for (const [process_, message] of [["gateway", "gateway listening"], ["pet-service", "pet-service listening"], ["gateway", "gateway stopped"]]) {
      expect(lines.some((l) => new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] INFO \\(${process_}\\): ${message}`).test(l)), `${process_}: ${message}`).toBe(true);
    }
    expect(lines.filter((l) => l.startsWith('{"level"'))).toEqual([]);
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}, 90_000);

it("with PETS_DB a PostgreSQL URL, keeps the demo key in data/demo-key, not in a directory named after the URL", async () => {
  // A directory of its own as the working directory, so the data/ it writes is not the checkout's.
  const cwd = await mkdtemp(path.join(os.tmpdir(), "petstore-start-pg-"));
  try {
    const { REDIS_URL: _never, ...inherited } = process.env;
    const child = spawn(
      process.execPath,
      [path.join(ROOT, "scripts/start.ts")],
      {
        cwd,
        env: {
          ...inherited,
          GATEWAY_PORT: String(await freePort()),
          PET_SERVICE_PORT: String(await freePort()),
          PETS_DB: "postgres://petstore:s3cret@127.0.0.1:1/pets",
          KEYS_DIR: path.join(cwd, "keys"),
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "ignore", "ignore"],
      },
    );
    // The processes it starts cannot run from here; the demo key is written before they start.
    await new Promise((resolve) => child.on("exit", resolve));
    expect(readdirSync(cwd).sort()).toEqual(["data", "keys"]);
    expect(existsSync(path.join(cwd, "data", "demo-key"))).toBe(true);
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
});
