/**
 * Two key-service replicas on one PostgreSQL database: one delivers a subscription at a time (its
 * lease), so each event arrives once, in order, whichever replica wrote it; when the one delivering
 * stops, the other takes over where it left off.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { generateAdminToken } from "../../../../keys/admin-tokens/tokens.ts";
import { adminRequest, startKeyService, type RunningKeyService } from "../../../../testkit/key-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../../testkit/postgres.ts";
import { until } from "../../../../testkit/until.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../../../testkit/webhook-receiver.ts";

let db: TestDatabase;
let a: RunningKeyService;
let b: RunningKeyService;
let receiver: WebhookReceiver;
const adminToken = generateAdminToken();
const keysDir = path.join(mkdtempSync(path.join(tmpdir(), "petstore-keys-hooks-")), "keys");
const webhooks = { pollMs: 20 };

beforeAll(async () => {
  db = await createTestDatabase();
  [a, b] = await Promise.all([startKeyService({ db: db.url, keysDir, adminToken, webhooks }), startKeyService({ db: db.url, keysDir, adminToken, webhooks })]);
});

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await receiver?.stop();
  await db?.drop();
  rmSync(path.dirname(keysDir), { recursive: true, force: true });
});

const on = (replica: RunningKeyService, method: string, p: string, body?: unknown) => adminRequest(replica.url, method, p, { token: adminToken, body });

async function createKeys(from: number, count: number, replicas: RunningKeyService[]): Promise<void> {
  // Five at a time, spread over the replicas.
  for (let i = from; i < from + count; i += 5) {
    await Promise.all(
      Array.from({ length: Math.min(5, from + count - i) }, async (_, j) => {
        expect((await on(replicas[(i + j) % replicas.length]!, "POST", "/v1/keys", { name: `r-${i + j}`, plan: "free" })).status).toBe(201);
      }),
    );
  }
}

it("delivers each event once per subscription, in seq order, with two replicas; the other takes over when one stops", { timeout: 60_000 }, async () => {
  let secret = "";
  receiver = await startWebhookReceiver(() => secret);
  const made = await on(b, "POST", "/v1/webhooks", { url: receiver.url, events: ["key.created"] });
  secret = made.body.secret;
  await createKeys(0, 30, [a, b]);
  await until("30 delivered", () => receiver.accepted.length >= 30, 30_000);
  await a.stop();
  await createKeys(30, 10, [b]);
  await until("40 delivered", () => receiver.accepted.length >= 40, 30_000);
  // Settle: nothing more arrives (no second delivery from the other replica).
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.problems).toEqual([]);
  const seqs = receiver.received.map((m) => m.seq);
  expect(seqs).toHaveLength(40);
  expect(new Set(seqs).size).toBe(40);
  expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
  const events = await on(b, "GET", "/v1/events?limit=1000");
  expect(seqs).toEqual(events.body.items.filter((e: { type: string }) => e.type === "key.created").map((e: { seq: number }) => e.seq));
  const deliveries = await on(b, "GET", `/v1/webhooks/${made.body.id}/deliveries?limit=100`);
  expect(deliveries.body.items.map((d: { attempt: number; status: number }) => [d.attempt, d.status])).toEqual(seqs.map(() => [1, 200]));
});
