/**
 * Webhook delivery end to end: the real key service (in this process, the retry schedule scaled
 * down: 1/100, so a minute is 0.6 s) POSTs to a real receiver on loopback that verifies every
 * signature with the independent `standardwebhooks` package, and fails, times out, goes away and
 * recovers as a test says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scaledSchedule } from "../../../../keys/webhooks/schedule.ts";
import { adminRequest, startKeyService, type RunningKeyService } from "../../../../testkit/key-service.ts";
import { until } from "../../../../testkit/until.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../../../testkit/webhook-receiver.ts";

const ALL = ["key.created", "key.updated", "key.rolled", "key.revoked", "key.banned", "usage.threshold"];

interface Harness {
  service: RunningKeyService;
  call(method: string, path: string, body?: unknown): ReturnType<typeof adminRequest>;
  /** A receiver and a subscription to it. */
  subscribe(events?: string[]): Promise<{ id: string; secret: string; receiver: WebhookReceiver }>;
  deliveries(id: string): Promise<{ eventSeq: number; type: string; attempt: number; status: number | null; at: string; error: string | null }[]>;
  stop(): Promise<void>;
}

async function harness(factor: number, timeoutMs: number): Promise<Harness> {
  const service = await startKeyService({ webhooks: { schedule: scaledSchedule(factor), timeoutMs, pollMs: 20 } });
  const receivers: WebhookReceiver[] = [];
  const call = (method: string, path: string, body?: unknown) => adminRequest(service.url, method, path, { token: service.adminToken, body });
  return {
    service,
    call,
    async subscribe(events = ALL) {
      let secret = "";
      const receiver = await startWebhookReceiver(() => secret);
      receivers.push(receiver);
      const made = await call("POST", "/v1/webhooks", { url: receiver.url, events });
      expect(made.status).toBe(201);
      secret = made.body.secret;
      return { id: made.body.id, secret, receiver };
    },
    async deliveries(id) {
      const items = [];
      let cursor: string | null = null;
      do {
        const page = await call("GET", `/v1/webhooks/${id}/deliveries?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
        expect(page.status).toBe(200);
        items.push(...page.body.items);
        cursor = page.body.nextCursor;
      } while (cursor);
      return items;
    },
    async stop() {
      await service.stop();
      for (const r of receivers) {
        await r.stop();
        expect(r.problems).toEqual([]);
      }
    },
  };
}

const newKey = async (h: Harness, name: string) => {
  const res = await h.call("POST", "/v1/keys", { name, plan: "free" });
  expect(res.status).toBe(201);
  return res.body as { id: string; key: string };
};

const metric = async (h: Harness, outcome: string) => {
  const text = await (await fetch(`${h.service.url}/metrics`)).text();
  return Number(new RegExp(`^keys_webhook_deliveries_total\\{outcome="${outcome}"\\} (\\S+)$`, "m").exec(text)?.[1]);
};

describe("webhook delivery (schedule at 1/100)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(1 / 100, 300);
  });
  afterAll(() => h?.stop());

  it("delivers key.created, updated, rolled and revoked, signed, each with the key's record as of that event and no token", async () => {
    const { receiver, secret } = await h.subscribe();
    const created = await newKey(h, "lifecycle");
    const { key: token, ...asCreated } = created;
    const updated = (await h.call("PATCH", `/v1/keys/${created.id}`, { name: "renamed", metadata: { tier: "gold" } })).body;
    const rolled = await h.call("POST", `/v1/keys/${created.id}/roll`, { graceSeconds: 60 });
    const { key: rolledToken, ...asRolled } = rolled.body;
    const revoked = (await h.call("POST", `/v1/keys/${created.id}/revoke`)).body;
    await until("four events arrive", () => receiver.accepted.length >= 4);
    expect(receiver.accepted.map((m) => m.type)).toEqual(["key.created", "key.updated", "key.rolled", "key.revoked"]);
    expect(receiver.accepted.map((m) => m.data)).toEqual([asCreated, updated, asRolled, revoked]);
    const seqs = receiver.accepted.map((m) => m.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    for (const m of receiver.accepted) expect(m.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    const everything = JSON.stringify(receiver.received);
    for (const secretText of [token, rolledToken, secret, secret.slice(6)]) expect(everything).not.toContain(secretText);
  });

  it("delivers usage.threshold with its payload and key.banned with the record as of the ban", async () => {
    const { receiver } = await h.subscribe(["key.banned", "usage.threshold"]);
    const { key: _token, ...record } = await newKey(h, "busy");
    // As the key service appends them from gateways' usage reports.
    const at = Date.now();
    await h.service.registry.appendEvent({ at, actor: "gateway", type: "usage.threshold", keyId: record.id, changes: { window: "day", percent: 80, used: 80, limit: 100 } });
    await h.service.registry.appendEvent({ at, actor: "gateway", type: "key.banned", keyId: record.id, changes: { until: new Date(at + 60_000).toISOString() } });
    await until("both arrive", () => receiver.accepted.length >= 2);
    expect(receiver.accepted.map((m) => [m.type, m.data])).toEqual([
      ["usage.threshold", { keyId: record.id, window: "day", percent: 80, used: 80, limit: 100 }],
      ["key.banned", record],
    ]);
  });

  it("a receiver that fails (500), then times out, then recovers gets every event afterwards, in order, each attempt visible", async () => {
    const { id, receiver } = await h.subscribe(["key.created"]);
    receiver.mode = "fail";
    const a = await newKey(h, "a");
    await until("two failed attempts", async () => (await h.deliveries(id)).filter((d) => d.status === 500).length >= 2);
    receiver.mode = "hang";
    const b = await newKey(h, "b");
    await until("an attempt timed out", async () => (await h.deliveries(id)).some((d) => d.error?.includes("timed out")));
    const c = await newKey(h, "c");
    receiver.mode = "ok";
    await until("all three delivered", () => receiver.accepted.length >= 3, 30_000);
    expect(receiver.accepted.map((m) => m.data.id)).toEqual([a.id, b.id, c.id]);
    // Every attempt at the first event (same webhook-id every time), then one each for the others.
    const attempts = await h.deliveries(id);
    const first = attempts.filter((d) => d.eventSeq === receiver.accepted[0]!.seq);
    expect(first.map((d) => d.attempt)).toEqual(first.map((_, i) => i + 1));
    expect(first.slice(0, 2).map((d) => [d.status, d.error])).toEqual([
      [500, "HTTP 500"],
      [500, "HTTP 500"],
    ]);
    expect(first.some((d) => d.status === null && /timed out/.test(d.error!))).toBe(true);
    expect(first.at(-1)).toMatchObject({ status: 200, error: null });
    expect(new Set(receiver.received.filter((m) => m.seq === first[0]!.eventSeq).map((m) => m.id)).size).toBe(1);
    expect(attempts.filter((d) => d.eventSeq !== first[0]!.eventSeq).map((d) => [d.type, d.attempt, d.status])).toEqual([
      ["key.created", 1, 200],
      ["key.created", 1, 200],
    ]);
    expect(attempts.map((d) => d.eventSeq)).toEqual(attempts.map((d) => d.eventSeq).sort((x, y) => x - y));
    expect(await metric(h, "failed")).toBeGreaterThanOrEqual(3);
    expect(await metric(h, "delivered")).toBeGreaterThanOrEqual(7);
  });

  it("a receiver down for a minute gets every event afterwards, in order", async () => {
    const { id, receiver } = await h.subscribe(["key.created", "key.revoked"]);
    await receiver.stop();
    const made = [];
    for (let i = 0; i < 3; i++) {
      made.push(await newKey(h, `down-${i}`));
      await new Promise((r) => setTimeout(r, 200));
    }
    await h.call("POST", `/v1/keys/${made[0]!.id}/revoke`);
    await until("attempts were refused", async () => (await h.deliveries(id)).some((d) => d.error?.startsWith("could not connect")));
    await receiver.start();
    await until("all four delivered", () => receiver.accepted.length >= 4, 30_000);
    expect(receiver.accepted.map((m) => [m.type, m.data.id])).toEqual([...made.map((k) => ["key.created", k.id]), ["key.revoked", made[0]!.id]]);
  });

  it("answers the subscriptions' delivery state in /metrics: the oldest pending event's age", async () => {
    const { receiver } = await h.subscribe(["key.created"]);
    receiver.mode = "fail";
    await newKey(h, "pending");
    const oldest = async () => Number(/^keys_webhook_oldest_pending_seconds (\S+)$/m.exec(await (await fetch(`${h.service.url}/metrics`)).text())?.[1]);
    await until("an event is pending", async () => (await oldest()) > 0.1);
    receiver.mode = "ok";
    await until("nothing is pending", async () => (await oldest()) === 0, 30_000);
  });
});

describe("webhook delivery given up (schedule at 1/10000: 24 h is 8.6 s)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness(1 / 10_000, 300);
  });
  afterAll(() => h?.stop());

  it("retries an event failing for 24 h, backing off, then gives it up and delivers the next", { timeout: 60_000 }, async () => {
    const { id, receiver } = await h.subscribe(["key.created"]);
    receiver.mode = "fail";
    const lost = await newKey(h, "lost");
    const next = await newKey(h, "next");
    await until("the next event is attempted", async () => (await h.deliveries(id)).some((d) => d.type === "key.created" && d.attempt === 1 && d.eventSeq !== (receiver.received[0]?.seq ?? -1)), 40_000, 200);
    receiver.mode = "ok";
    await until("the next one delivered", () => receiver.accepted.length >= 1, 30_000);
    expect(receiver.accepted.map((m) => m.data.id)).toEqual([next.id]);
    expect(receiver.received.filter((m) => m.data.id === lost.id).length).toBeGreaterThan(10);
    const attempts = (await h.deliveries(id)).filter((d) => d.eventSeq === receiver.received[0]!.seq);
    const span = Date.parse(attempts.at(-1)!.at) - Date.parse(attempts[0]!.at);
    expect(span).toBeGreaterThanOrEqual(8_640 - 400);
    // Backing off: later gaps are longer than the first ones.
    const gaps = attempts.slice(1).map((d, i) => Date.parse(d.at) - Date.parse(attempts[i]!.at));
    expect(Math.max(...gaps.slice(-5))).toBeGreaterThan(Math.max(...gaps.slice(0, 3)));
    expect(await metric(h, "given_up")).toBe(1);
  });
});
