import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
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

// `npm start` as a new user runs it: three processes, a demo key, a curl line that works, Ctrl-C.
const ROOT = path.resolve(import.meta.dirname, "../..");
const dirs: string[] = [];

afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(name: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `petstore-start-${name}-`));
  dirs.push(dir);
  return dir;
}

/** npm start's environment on free ports, its state in `dir` (never the developer's REDIS_URL). */
async function startEnv(dir: string, extra: Record<string, string> = {}) {
  const ports = { gateway: await freePort(), pet: await freePort(), petMetrics: await freePort(), keys: await freePort() };
  const { REDIS_URL: _never, ...inherited } = process.env;
  const env = {
    ...inherited,
    GATEWAY_PORT: String(ports.gateway),
    PET_SERVICE_PORT: String(ports.pet),
    METRICS_PORT: String(ports.petMetrics),
    KEYS_PORT: String(ports.keys),
    PETS_DB: path.join(dir, "pets.sqlite"),
    KEYS_DB: path.join(dir, "keys.sqlite"),
    KEYS_DIR: path.join(dir, "keys"),
    LOG_LEVEL: "warn",
    ...extra,
  };
  return { ports, env };
}

interface Started {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

/** `node scripts/start.ts` until it has printed its banner. */
async function npmStart(env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, ["scripts/start.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await until("npm start has printed its banner", () => stdout.includes("Ctrl-C stops") || child.exitCode !== null, 60_000, 100).catch(() => {});
  expect(stdout, stderr).toContain("Ctrl-C stops");
  return { child, stdout: () => stdout, exited };
}

const local = (url: string) => url.replace("localhost", "127.0.0.1");
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

it("starts the three processes, prints a working curl line, the docs and portal URLs and the admin API with its token, and stops all three cleanly on Ctrl-C", async () => {
  const dir = await tempDir("banner");
  const { ports, env } = await startEnv(dir);
  const { child, stdout: out, exited } = await npmStart(env);
  const stdout = out();
  expect(stdout).toContain(`Base URL:  http://localhost:${ports.gateway}/v1`);

  // README's first screen shows exactly this output (only the key, the ports and the files differ).
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const shown = /`npm start` prints something like:\n\n```\n([\s\S]*?)```/.exec(readme)?.[1];
  const normalize = (text: string) =>
    text
      .replace(/eyJ[A-Za-z0-9_.-]*/g, "KEY")
      .replace(/localhost:[0-9]+/g, "localhost:PORT")
      .replace(/saved in [^)]+\)/, "saved in FILE)")
      .replace(/token in [^)]+\)/, "token in FILE)")
      .replace(/\$\(cat [^)]+\)/, "$(cat FILE)")
      .replace(/Node: +v[0-9.]+/, "Node: VERSION")
      .trim()
      .split("\n")
      .map((line) => line.trimEnd());
  expect(shown).toBeDefined();
  expect(normalize(stdout)).toEqual(normalize(shown!));

  // The printed docs URL serves the reference page (tests/integration/gateway/ops/docs.test.ts opens it in a browser).
  const docsUrl = /Docs: +(\S+)/.exec(stdout)?.[1];
  expect(docsUrl).toBe(`http://localhost:${ports.gateway}/docs`);
  const docs = await fetch(local(docsUrl!));
  expect(docs.status).toBe(200);
  expect(docs.headers.get("content-type")).toMatch(/^text\/html/);
  expect(await docs.text()).toContain('<div id="swagger-ui">');
  // …and the portal URL the key holder's page (tests/integration/gateway/portal/ opens it in a browser).
  const portalUrl = /Portal: +(\S+)/.exec(stdout)?.[1];
  expect(portalUrl).toBe(`http://localhost:${ports.gateway}/portal`);
  const portal = await fetch(local(portalUrl!));
  expect(portal.status).toBe(200);
  expect(await portal.text()).toContain('<form id="key-form"');

  // Run the printed curl line's request: the key and URL it shows work as printed.
  const curl = /curl -s -H "Authorization: Bearer ([^"$]+)" (\S+)/.exec(stdout);
  expect(curl).not.toBeNull();
  const res = await fetch(local(curl![2]!), { headers: bearer(curl![1]!) });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual([]);
  expect(readFileSync(path.join(dir, "demo-key"), "utf8").trim()).toBe(curl![1]);

  // The admin API where it says, with the token from the file it names: the demo key is listed.
  const admin = /Admin API: +(\S+) .*token in ([^)]+)\)/.exec(stdout);
  expect(admin?.[1]).toBe(`http://localhost:${ports.keys}`);
  expect(admin?.[2]).toBe(path.join(dir, "admin-token"));
  const adminUrl = local(admin![1]!);
  expect((await fetch(`${adminUrl}/healthz`)).status).toBe(200);
  const adminToken = readFileSync(admin![2]!, "utf8").trim();
  const listed = await fetch(`${adminUrl}/v1/keys`, { headers: bearer(adminToken) });
  expect(listed.status).toBe(200);
  expect(((await listed.json()) as { items: { name: string }[] }).items.map((k) => k.name)).toContain("demo (npm start)");
  // The printed admin curl line asks the same (the shell substitutes the file).
  expect(stdout).toContain(`curl -s -H "Authorization: Bearer $(cat ${admin![2]})" ${admin![1]}/v1/keys`);

  // A key made through the admin API works on the gateway, and is refused within 1 s of its revocation.
  const created = await fetch(`${adminUrl}/v1/keys`, {
    method: "POST",
    headers: { ...bearer(adminToken), "content-type": "application/json" },
    body: JSON.stringify({ name: "start test", plan: "free" }),
  });
  expect(created.status).toBe(201);
  const { id, key } = (await created.json()) as { id: string; key: string };
  const pets = `http://127.0.0.1:${ports.gateway}/v1/pets`;
  await until("the gateway accepts the new key", async () => (await fetch(pets, { headers: bearer(key) })).status === 200, 5_000);
  expect((await fetch(`${adminUrl}/v1/keys/${id}/revoke`, { method: "POST", headers: bearer(adminToken) })).status).toBe(200);
  const revokedAt = Date.now();
  await until("the gateway refuses the revoked key", async () => (await fetch(pets, { headers: bearer(key) })).status === 401, 5_000, 20);
  expect(Date.now() - revokedAt).toBeLessThan(1_000);

  // The three processes run on the project's runtime (Node >= 26), whatever node the machine has:
  // each says which in its own metrics, and npm start prints the same version.
  const printed = /Node: +v(\d+)\.(\d+)\.(\d+)/.exec(stdout);
  expect(Number(printed?.[1])).toBeGreaterThanOrEqual(26);
  for (const metrics of [`http://127.0.0.1:${ports.gateway}/metrics`, `http://127.0.0.1:${ports.petMetrics}/metrics`, `${adminUrl}/metrics`]) {
    const samples = parseExposition(await (await fetch(metrics)).text()).filter((s) => s.name === "nodejs_version_info");
    expect(samples.map((s) => s.labels.version), metrics).toEqual([`v${printed![1]}.${printed![2]}.${printed![3]}`]);
  }

  child.kill("SIGINT");
  expect(await exited).toBe(0);
  await expect(fetch(`http://127.0.0.1:${ports.gateway}/healthz`)).rejects.toThrow();
  await expect(fetch(`${adminUrl}/healthz`)).rejects.toThrow();
}, 120_000);

it("on later starts, reuses the demo key and the gateway's token, and replaces a token the key service refuses", async () => {
  const dir = await tempDir("again");
  const run = async () => {
    const { ports, env } = await startEnv(dir);
    const started = await npmStart(env);
    const read = (file: string) => readFileSync(path.join(dir, file), "utf8").trim();
    return { ...started, ports, demo: read("demo-key"), gatewayToken: read("gateway-token"), adminToken: read("admin-token") };
  };
  const stop = async (r: Started) => {
    r.child.kill("SIGINT");
    expect(await r.exited).toBe(0);
  };

  const first = await run();
  expect((statSync(path.join(dir, "gateway-token")).mode & 0o777).toString(8)).toBe("600");
  await stop(first);

  const second = await run();
  expect({ demo: second.demo, gatewayToken: second.gatewayToken }).toEqual({ demo: first.demo, gatewayToken: first.gatewayToken });
  // Revoked through the admin API: the next start makes the gateway a new one.
  const adminUrl = `http://127.0.0.1:${second.ports.keys}`;
  const tokens = (await (await fetch(`${adminUrl}/v1/admin-tokens`, { headers: bearer(second.adminToken) })).json()) as { items: { id: string; name: string; revokedAt: string | null }[] };
  const gateway = tokens.items.filter((t) => t.name === "gateway" && t.revokedAt === null);
  expect(gateway).toHaveLength(1);
  expect((await fetch(`${adminUrl}/v1/admin-tokens/${gateway[0]!.id}/revoke`, { method: "POST", headers: bearer(second.adminToken) })).status).toBe(200);
  await stop(second);

  const third = await run();
  expect(third.demo).toBe(first.demo);
  expect(third.gatewayToken).not.toBe(first.gatewayToken);
  expect((await fetch(`http://127.0.0.1:${third.ports.gateway}/v1/pets`, { headers: bearer(third.demo) })).status).toBe(200);
  await stop(third);
}, 180_000);

it("with stdout's reader gone before the banner (npm start | head), runs on, and Ctrl-C still stops the three processes within their deadlines", async () => {
  const dir = await tempDir("gone");
  const { ports, env } = await startEnv(dir, { LOG_LEVEL: "info" });
  // A process group of its own, so whatever is left of it can be killed afterwards.
  const child = spawn(process.execPath, ["scripts/start.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await closeReader(child.stdout);
    await until("the gateway is ready", async () => (await fetch(`http://127.0.0.1:${ports.gateway}/readyz`).catch(() => undefined))?.status === 200, 60_000, 200);
    // The banner comes after readiness: give it the moment to be written, and refused.
    await until("npm start has said its banner could not be shown", () => stderr.includes("npm start: cannot write to stdout (EPIPE)"), 15_000);
    expect(child.exitCode).toBeNull();

    const ended = exitWithin(child, shutdownDeadlineMs(loadGatewayConfig({})) + 5_000);
    child.kill("SIGINT");
    expect(await ended).toEqual({ code: 0, signal: null });
    await expect(fetch(`http://127.0.0.1:${ports.gateway}/healthz`)).rejects.toThrow();
    await expect(fetch(`http://127.0.0.1:${ports.keys}/healthz`)).rejects.toThrow();
    await expect(checkHealth(`127.0.0.1:${ports.pet}`, "", { timeoutMs: 1_000 })).rejects.toThrow();
  } finally {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // Nothing of it left.
    }
  }
}, 120_000);

it("in a terminal, shows readable log lines (time, level, process, message) instead of JSON, and stops on Ctrl-C", async () => {
  const dir = await tempDir("tty");
  const { env } = await startEnv(dir, { LOG_LEVEL: "info" });
  // A real pseudo-terminal: util-linux's script runs npm start's script on one, as a terminal would.
  // exec: script runs the command through $SHELL, and dash (CI's /bin/sh) stays as the parent
  // and dies of the terminal's SIGINT itself (exit 130), whatever the script does.
  const child = spawn("script", ["-q", "-e", "-c", `exec '${process.execPath}' scripts/start.ts`, "/dev/null"], { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // A loaded CI machine can take a while to start the processes; the terminal must show the
  // banner before Ctrl-C is typed, or this would test an interrupted start.
  await until("the terminal shows the banner", () => output.includes("Ctrl-C stops"), 60_000, 100).catch(() => {});
  expect(output).toContain("Ctrl-C stops");
  // Ctrl-C typed on the terminal: SIGINT to npm start and the three processes.
  child.stdin.write("\x03");
  expect(await exited).toBe(0);
  const lines = output.replace(/\x1b\[[0-9;]*m/g, "").split(/\r?\n/);
  for (const [process_, message] of [
    ["key-service", "key service listening"],
    ["gateway", "gateway listening"],
    ["pet-service", "pet-service listening"],
    ["gateway", "gateway stopped"],
  ]) {
    expect(lines.some((l) => new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] INFO \\(${process_}\\): ${message}`).test(l)), `${process_}: ${message}`).toBe(true);
  }
  expect(lines.filter((l) => l.startsWith('{"level"'))).toEqual([]);
}, 90_000);

it("with PETS_DB a PostgreSQL URL, keeps the demo key in data/demo-key, not in a directory named after the URL", async () => {
  // A directory of its own as the working directory, so the data/ it writes is not the checkout's.
  const cwd = await tempDir("pg");
  const { env } = await startEnv(cwd, { PETS_DB: "postgres://petstore:s3cret@127.0.0.1:1/pets" });
  const { KEYS_DB: _default, ...withDefaultKeysDb } = env;
  const child = spawn(process.execPath, [path.join(ROOT, "scripts/start.ts")], { cwd, env: withDefaultKeysDb, stdio: ["ignore", "ignore", "ignore"] });
  // The pet service cannot open that database; the key service and the demo key come before it.
  await new Promise((resolve) => child.on("exit", resolve));
  expect(readdirSync(cwd).sort()).toEqual(["data", "keys"]);
  expect(existsSync(path.join(cwd, "data", "demo-key"))).toBe(true);
  // The key service's defaults are relative to where npm start runs: data/keys.sqlite, and the tokens beside it.
  expect(readdirSync(path.join(cwd, "data"))).toEqual(expect.arrayContaining(["keys.sqlite", "admin-token", "gateway-token"]));
}, 60_000);
