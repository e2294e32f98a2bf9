/** Usage reports and histories over real HTTP: a retried report counts once, ranges, scopes, events, the metric. */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useCheckedAdminCalls } from "../../../../testkit/admin-openapi.ts";
import { useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const call = useCheckedAdminCalls(keyService);

const HOUR = 3_600_000;
const thisHour = () => Math.floor(Date.now() / HOUR) * HOUR;
const bucket = (keyId: string, hour: number, c: Record<string, number>) => ({
  keyId,
  hour: new Date(hour).toISOString(),
  "2xx": 0,
  "4xx": 0,
  "5xx": 0,
  limited: 0,
  banned: 0,
  forbidden: 0,
  ...c,
});

async function newKey(perDay?: number): Promise<string> {
  const made = await call("POST", "/v1/keys", { body: { name: "usage", plan: perDay ? "enterprise" : "pro", ...(perDay && { perMinute: perDay, perDay }) } });
  expect(made.status).toBe(201);
  return made.body.id as string;
}

async function token(scopes: string[]): Promise<string> {
  return (await call("POST", "/v1/admin-tokens", { body: { name: `t-${randomUUID()}`, scopes } })).body.token as string;
}

describe("usage reports and history", () => {
  it("adds reports up by hour and day; a retried report id is accepted (202) and counted once", async () => {
    const id = await newKey();
    const h = thisHour();
    const report = { reportId: randomUUID(), gatewayId: "gw-a", buckets: [bucket(id, h, { "2xx": 3, "4xx": 1, forbidden: 2 })] };
    for (let i = 0; i < 2; i++) {
      const sent = await call("POST", "/v1/usage/reports", { body: report });
      expect(sent.status).toBe(202);
      expect(sent.body).toEqual({ accepted: true });
    }
    await call("POST", "/v1/usage/reports", { body: { reportId: randomUUID(), gatewayId: "gw-b", buckets: [bucket(id, h, { "2xx": 1, limited: 4 })] } });
    const hours = await call("GET", `/v1/keys/${id}/usage/history`);
    expect(hours.status).toBe(200);
    expect(hours.body).toEqual({
      granularity: "hour",
      buckets: [{ start: new Date(h).toISOString(), total: 11, "2xx": 4, "4xx": 1, "5xx": 0, limited: 4, banned: 0, forbidden: 2 }],
    });
    const days = await call("GET", `/v1/keys/${id}/usage/history?granularity=day`);
    expect(days.body.buckets).toHaveLength(1);
    expect(days.body.buckets[0].total).toBe(11);
    const metrics = await fetch(`${keyService().url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/keys_usage_reports_total\{outcome="duplicate"\} 1/);
    expect(metrics).toMatch(/keys_usage_reports_total\{outcome="applied"\} [1-9]/);
  });

  it("answers ranges [from, to) and refuses bad ones naming the field", async () => {
    const id = await newKey();
    const h = thisHour() - 10 * HOUR;
    await call("POST", "/v1/usage/reports", { body: { reportId: randomUUID(), gatewayId: "gw", buckets: [0, 1, 2].map((i) => bucket(id, h + i * HOUR, { "2xx": i + 1 })) } });
    const iso = (ms: number) => new Date(ms).toISOString();
    const range = await call("GET", `/v1/keys/${id}/usage/history?from=${iso(h + HOUR + 1)}&to=${iso(h + 3 * HOUR)}`);
    expect(range.body.buckets.map((b: { "2xx": number }) => b["2xx"])).toEqual([2, 3]);
    const bad = async (query: string) => (await call("GET", `/v1/keys/${id}/usage/history?${query}`)).body;
    expect((await bad("granularity=week")).details).toEqual([{ field: "query.granularity", message: "must be hour or day" }]);
    expect((await bad("from=yesterday")).details[0].field).toBe("query.from");
    expect((await bad(`from=${iso(h)}&to=${iso(h)}`)).details[0]).toEqual({ field: "query.from", message: "must be before to" });
    expect((await bad(`from=${iso(h - 36 * 24 * HOUR)}&to=${iso(h)}`)).details[0].field).toBe("query.from");
    expect((await call("GET", `/v1/keys/${id}/usage/history?granularity=day&from=${iso(h - 300 * 24 * HOUR)}`)).status).toBe(200);
    expect((await call("GET", "/v1/keys/key_nobody/usage/history")).status).toBe(404);
  });

  it("takes reports from the gateway scope only; histories for keys:read or gateway", async () => {
    const id = await newKey();
    const [reader, gateway] = [await token(["keys:read"]), await token(["gateway"])];
    const report = { reportId: randomUUID(), gatewayId: "gw", buckets: [bucket(id, thisHour(), { "2xx": 1 })] };
    expect((await call("POST", "/v1/usage/reports", { token: reader, body: report })).status).toBe(403);
    expect((await call("POST", "/v1/usage/reports", { token: gateway, body: report })).status).toBe(202);
    expect((await call("GET", `/v1/keys/${id}/usage/history`, { token: reader })).status).toBe(200);
    expect((await call("GET", `/v1/keys/${id}/usage/history`, { token: gateway })).status).toBe(200);
    const notHour = await call("POST", "/v1/usage/reports", { token: gateway, body: { ...report, reportId: randomUUID(), buckets: [bucket(id, thisHour() + 1, {})] } });
    expect(notHour.status).toBe(400);
    expect(notHour.body.details[0].field).toBe("buckets.0.hour");
  });

  it("makes key.banned once per ban and usage.threshold at 80 % and 100 % of perDay once each per UTC day", async () => {
    const id = await newKey(10);
    const h = thisHour();
    const until = new Date(Date.now() + 900_000).toISOString();
    const send = (c: Record<string, number>, bans: unknown[] = []) =>
      call("POST", "/v1/usage/reports", { body: { reportId: randomUUID(), gatewayId: "gw", buckets: [bucket(id, h, c)], bans } });
    await send({ "2xx": 7 });
    await send({ "2xx": 1 }, [{ keyId: id, until }]);
    await send({ "5xx": 1, limited: 9 }, [{ keyId: id, until }]);
    await send({ "4xx": 5 });
    const events = (await call("GET", "/v1/events?limit=1000")).body.items.filter((e: { keyId: string; type: string }) => e.keyId === id && e.type !== "key.created");
    expect(events.map((e: { type: string; changes: unknown }) => [e.type, e.changes])).toEqual([
      ["key.banned", { until }],
      ["usage.threshold", { window: "day", percent: 80, used: 8, limit: 10 }],
      ["usage.threshold", { window: "day", percent: 100, used: 14, limit: 10 }],
    ]);
  });
});
