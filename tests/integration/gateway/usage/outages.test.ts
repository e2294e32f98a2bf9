/**
 * Usage reporting through failures (issue 40, Performance and reliability): a key-service outage
 * (its connections cut) keeps the counts waiting and they arrive once it is back; past the
 * backlog's bound new key-hours are dropped and counted in gateway_usage_dropped_total; a key
 * service killed with -9 loses nothing it acknowledged; a gateway killed with -9 loses at most
 * its last unsent second.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminRequest, spawnKeyService, type KeyServiceProcess } from "../../../../testkit/key-service.ts";
import { createTestKeys, keyIdOf, startGateway, type RunningGateway, type TestKeys } from "../../../../testkit/gateway.ts";
import { spawnGateway } from "../../../../testkit/gateway-process.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { metricValue } from "../../../../testkit/promql.ts";
import { startTcpProxy, type TcpProxy } from "../../../../testkit/tcp-proxy.ts";
import { until } from "../../../../testkit/until.ts";

let pets: RunningPetService;

beforeAll(async () => {
  pets = await startPetService();
});
afterAll(async () => {
  await pets?.stop();
});

const get = async (url: string, key: string) => {
  const res = await fetch(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
};

/** Requests in a key's hourly history, as the admin API answers it. */
async function reported(url: string, token: string, key: string): Promise<number> {
  const { status, body } = await adminRequest(url, "GET", `/v1/keys/${keyIdOf(key)}/usage/history`, { token });
  if (status !== 200) return -1;
  return (body.buckets as { total: number }[]).reduce((sum, b) => sum + b.total, 0);
}

const metric = async (g: RunningGateway, name: string, labels: Record<string, string> = {}) => (await metricValue(`${g.url}/metrics`, name, labels)) ?? 0;

describe("a key-service outage (its connections cut)", () => {
  let keys: TestKeys;
  let proxy: TcpProxy;
  const gateways: RunningGateway[] = [];

  beforeAll(async () => {
    keys = await createTestKeys();
    proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(keys.service.url).port) });
  });
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await proxy?.close();
    await keys?.remove();
  });

  const throughProxy = (opts: { usageBacklogKeyHours?: number } = {}) =>
    startGateway({
      petServiceAddr: pets.address,
      keys: { gatewayEnv: { ...keys.gatewayEnv, KEYS_URL: `http://127.0.0.1:${proxy.port}` } },
      ...opts,
    }).then((g) => (gateways.push(g), g));
  const counted = (key: string) => reported(keys.service.url, keys.service.adminToken, key);

  it("keeps the counts while it lasts and delivers them all once it is over", { timeout: 40_000 }, async () => {
    const g = await throughProxy();
    const key = await keys.issue();
    for (let i = 0; i < 3; i++) expect(await get(g.url, key)).toBe(200);
    await until("the first requests are reported", async () => (await counted(key)) === 3);
    await proxy.cut();
    try {
      for (let i = 0; i < 5; i++) expect(await get(g.url, key)).toBe(200);
      await until("a report failed", async () => (await metric(g, "gateway_usage_reports_total", { outcome: "failed" })) >= 2);
      expect(await metric(g, "gateway_usage_backlog")).toBe(1);
      expect(await counted(key)).toBe(3);
    } finally {
      await proxy.restore();
    }
    await until("the waiting counts arrive", async () => (await counted(key)) === 8);
    await until("the backlog is empty", async () => (await metric(g, "gateway_usage_backlog")) === 0);
    expect(await metric(g, "gateway_usage_dropped_total")).toBe(0);
  });

  it("past the bound drops new key-hours, counted in gateway_usage_dropped_total; the rest arrives", { timeout: 40_000 }, async () => {
    const g = await throughProxy({ usageBacklogKeyHours: 2 });
    const issued = [await keys.issue(), await keys.issue(), await keys.issue(), await keys.issue()];
    // Two key-hours at a time: within the bound.
    for (const pair of [issued.slice(0, 2), issued.slice(2)]) {
      for (const key of pair) expect(await get(g.url, key)).toBe(200);
      for (const key of pair) await until("each key's first request is reported", async () => (await counted(key)) === 1);
    }
    await until("the backlog is empty", async () => (await metric(g, "gateway_usage_backlog")) === 0);
    await proxy.cut();
    try {
      for (const key of issued) for (let i = 0; i < 3; i++) expect(await get(g.url, key)).toBe(200);
      expect(await metric(g, "gateway_usage_dropped_total")).toBe(6);
      expect(await metric(g, "gateway_usage_backlog")).toBe(2);
    } finally {
      await proxy.restore();
    }
    await until("the kept counts arrive", async () => (await counted(issued[1]!)) === 4);
    expect(await Promise.all(issued.map(counted))).toEqual([4, 4, 1, 1]);
  });
});

describe("kill -9 and SIGTERM", () => {
  let dir: string;
  let service: KeyServiceProcess | undefined;
  const token = `pskadm_${randomBytes(32).toString("base64url")}`;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "petstore-usage-kill-"));
  });
  afterAll(async () => {
    if (service && service.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGKILL");
    await service?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const env = (port?: string) => ({
    KEYS_DB: path.join(dir, "keys.sqlite"),
    KEYS_DIR: path.join(dir, "keys"),
    KEYS_ADMIN_TOKEN: token,
    ...(port && { KEYS_PORT: port }),
  });
  const issue = async (url: string) => {
    const made = await adminRequest(url, "POST", "/v1/keys", { token, body: { name: "usage", plan: "business" } });
    expect(made.status).toBe(201);
    return made.body.key as string;
  };

  it("of the key service loses no acknowledged report; what the gateway counted meanwhile arrives after its restart", { timeout: 60_000 }, async () => {
    service = await spawnKeyService(env());
    const url = service.url;
    const g = await startGateway({ petServiceAddr: pets.address, keys: { gatewayEnv: { KEYS_URL: url, KEYS_SERVICE_TOKEN: token } } });
    try {
      const key = await issue(url);
      for (let i = 0; i < 6; i++) expect(await get(g.url, key)).toBe(200);
      await until("every count is acknowledged", async () => (await metric(g, "gateway_usage_backlog")) === 0 && (await reported(url, token, key)) === 6);
      service.child.kill("SIGKILL");
      await service.exited;
      for (let i = 0; i < 4; i++) expect(await get(g.url, key)).toBe(200);
      service = await spawnKeyService(env(new URL(url).port));
      await until("the counts of the outage arrive", async () => (await reported(url, token, key)) === 10, 30_000);
    } finally {
      await g.close();
    }
  });

  it("of a gateway loses at most its last unsent second", { timeout: 60_000 }, async () => {
    service ??= await spawnKeyService(env());
    const url = service.url;
    const key = await issue(url);
    const gw = await spawnGateway({ PET_SERVICE_ADDR: pets.address, KEYS_URL: url, KEYS_SERVICE_TOKEN: token });
    const answeredAt: number[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        expect(await get(gw.url, key)).toBe(200);
        answeredAt.push(Date.now());
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      gw.child.kill("SIGKILL");
      await gw.exited;
    }
    const killedAt = Date.now();
    // Whatever was reported has arrived by now (a report in flight at the kill is answered or lost).
    await new Promise((r) => setTimeout(r, 1_000));
    const total = await reported(url, token, key);
    // A timer's second, and as much again for a loaded machine's late tick and the report's own trip.
    const surelySent = answeredAt.filter((t) => t < killedAt - 2_000).length;
    expect(total).toBeLessThanOrEqual(30);
    expect(total).toBeGreaterThanOrEqual(surelySent);
    expect(surelySent).toBeGreaterThan(5);
  });

  it("of a gateway (SIGTERM) sends its last counts before it exits", { timeout: 60_000 }, async () => {
    service ??= await spawnKeyService(env());
    const url = service.url;
    const key = await issue(url);
    const gw = await spawnGateway({ PET_SERVICE_ADDR: pets.address, KEYS_URL: url, KEYS_SERVICE_TOKEN: token });
    for (let i = 0; i < 7; i++) expect(await get(gw.url, key)).toBe(200);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(await reported(url, token, key)).toBe(7);
  });
});
