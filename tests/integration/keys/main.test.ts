/**
 * The key service as operators run it (`node keys/main.ts`): bad configuration, the start line and
 * the bootstrap token file, logs without secrets, a prompt SIGTERM, and no acknowledged create
 * lost to kill -9.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { exitWithin, launchNode } from "../../../testkit/process.ts";
import { until } from "../../../testkit/until.ts";
import { adminRequest, spawnKeyService, type KeyServiceProcess } from "../../../testkit/key-service.ts";

let dir: string;
let running: KeyServiceProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "petstore-keysvc-"));
});

afterEach(async () => {
  for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  running = [];
  rmSync(dir, { recursive: true, force: true });
});

const envIn = (d: string) => ({ KEYS_DB: path.join(d, "db", "keys.sqlite"), KEYS_DIR: path.join(d, "keys"), LOG_LEVEL: "info" });

async function spawn(env: Record<string, string>): Promise<KeyServiceProcess> {
  const p = await spawnKeyService(env);
  running.push(p);
  return p;
}

describe("bad configuration", () => {
  it.each([
    ["KEYS_PORT", "eighty"],
    ["KEYS_HOST", "not a host!"],
    ["KEYS_DB", "mysql://db/keys"],
    ["KEYS_ADMIN_TOKEN", "hunter2"],
    ["REDIS_URL", "http://redis"],
    ["SHUTDOWN_GRACE_MS", "-5"],
  ])("exits 1 with one line naming %s", async (variable, value) => {
    const { exited } = launchNode("keys/main.ts", { ...envIn(dir), [variable]: value });
    const { code, stderr, stdout } = await exited;
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(stdout).toBe("");
    // The value of a secret is not echoed back.
    if (variable === "KEYS_ADMIN_TOKEN") expect(stderr).not.toContain("hunter2");
  });
});

describe("a running key service", () => {
  it("starts with one line naming its URL, saves the generated admin token 0600 beside KEYS_DB, and logs no secret", async () => {
    const keys = await spawn(envIn(dir));
    // /healthz can answer before the log's batched write of the start line (sonic-boom, ≤ 10 ms).
    await until("the start line", () => keys.output().includes("key service listening"));
    const starts = keys.output().split("\n").filter((l) => l.includes("key service listening"));
    expect(starts).toHaveLength(1);
    expect(starts[0]).toContain(keys.url);
    const tokenFile = path.join(dir, "db", "admin-token");
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const adminToken = readFileSync(tokenFile, "utf8").trim();

    const created = await adminRequest(keys.url, "POST", "/v1/keys", { token: adminToken, body: { name: "Logged?", plan: "free" } });
    expect(created.status).toBe(201);
    const other = await adminRequest(keys.url, "POST", "/v1/admin-tokens", { token: adminToken, body: { name: "second", scopes: ["keys:read"] } });
    await adminRequest(keys.url, "GET", "/v1/keys", { token: other.body.token });
    await adminRequest(keys.url, "GET", "/v1/keys", { token: `pskadm_${"x".repeat(43)}` });
    await adminRequest(keys.url, "GET", `/v1/keys/${created.body.id}`, { token: created.body.key });
    // The last request's line (the API key sent as an admin token: 401).
    await until("the access log has the last request", () => keys.output().includes('"route":"/v1/keys/{id}"'));
    const log = keys.output();
    for (const secret of [adminToken, other.body.token, created.body.key, `pskadm_${"x".repeat(43)}`]) expect(log).not.toContain(secret);
    expect(log.toLowerCase()).not.toContain("bearer");
  });

  it("keeps its admin token across restarts, and ensures KEYS_ADMIN_TOKEN's", async () => {
    const first = await spawn(envIn(dir));
    const saved = readFileSync(path.join(dir, "db", "admin-token"), "utf8").trim();
    first.child.kill("SIGTERM");
    await first.exited;
    const configured = `pskadm_${"Q".repeat(43)}`;
    const second = await spawn({ ...envIn(dir), KEYS_ADMIN_TOKEN: configured });
    expect((await adminRequest(second.url, "GET", "/v1/keys", { token: configured })).status).toBe(200);
    // The generated one is still valid until revoked.
    expect((await adminRequest(second.url, "GET", "/v1/keys", { token: saved })).status).toBe(200);
  });

  it("on SIGTERM answers a waiting long poll and exits 0 promptly", async () => {
    const keys = await spawn(envIn(dir));
    const token = readFileSync(path.join(dir, "db", "admin-token"), "utf8").trim();
    const polled = adminRequest(keys.url, "GET", "/v1/events?after=1000&wait=30", { token });
    await new Promise((r) => setTimeout(r, 300));
    const ended = exitWithin(keys.child, 5_000);
    keys.child.kill("SIGTERM");
    expect((await polled).status).toBe(200);
    expect(await ended).toEqual({ code: 0, signal: null });
  });

  it("loses no acknowledged create to kill -9: 50 at once, killed as the last 201 arrives, all there after a restart", async () => {
    const keys = await spawn(envIn(dir));
    const token = readFileSync(path.join(dir, "db", "admin-token"), "utf8").trim();
    let acknowledged = 0;
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const res = await adminRequest(keys.url, "POST", "/v1/keys", { token, body: { name: `durable-${i}`, plan: "free" } });
        expect(res.status).toBe(201);
        ids.push(res.body.id);
        if (++acknowledged === 50) keys.child.kill("SIGKILL");
      }),
    );
    expect(await keys.exited).toBeNull();
    const again = await spawn(envIn(dir));
    for (const id of ids) expect((await adminRequest(again.url, "GET", `/v1/keys/${id}`, { token })).status).toBe(200);
    const events = await adminRequest(again.url, "GET", "/v1/events?limit=1000", { token });
    expect(events.body.items.filter((e: { type: string }) => e.type === "key.created")).toHaveLength(50);
  });
});
