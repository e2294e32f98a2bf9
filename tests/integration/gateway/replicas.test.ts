import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../testkit/postgres.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { metricValue } from "../../../testkit/promql.ts";

// Two pet-service replicas on one PostgreSQL database behind one gateway (PET_SERVICE_ADDR an
// ipv4: list, balanced round robin). Eight clients create pets, half with an Idempotency-Key and
// half without (the gateway makes the request_id); one replica is SIGKILLed mid-stream. Calls it
// was serving fail with UNAVAILABLE and the gateway retries them on the other replica, so clients
// see no 5xx at all, and every acknowledged pet is stored exactly once under its id.

const CLIENTS = 8;
/** Creates each replica serves before the kill; how long creates go on after it. */
const BEFORE_KILL = 20;
const AFTER_MS = 1_500;

let db: TestDatabase;
let replicas: SpawnedPetService[];
let keys: TestKeys;
let gateway: RunningGateway;

beforeAll(async () => {
  db = await createTestDatabase();
  replicas = await Promise.all([0, 1].map(() => spawnPetService({ dbPath: db.url })));
  keys = await createTestKeys();
  // The deadline is generous: this test is about failures of replicas, not a loaded machine's latency.
  gateway = await startGateway({
    petServiceAddr: `ipv4:${replicas.map((r) => r.address).join(",")}`,
    keys,
    timeoutMs: 15_000,
  });
});

afterAll(async () => {
  await gateway?.close();
  await Promise.all((replicas ?? []).map((r) => r.kill("SIGKILL")));
  await keys?.remove();
  await db?.drop();
});

interface Outcome {
  name: string;
  idempotencyKey?: string;
  status: number;
  body: { id?: number; name?: string; code?: string } | string;
}

it("kill -9 of one replica under 8 clients creating: 0 5xx, every 201 stored exactly once", { timeout: 60_000 }, async () => {
  const key = await keys.issue({ plan: "enterprise", perMinute: 100_000, perDay: 1_000_000 });
  const outcomes: Outcome[] = [];
  let stop = false;

  async function client(c: number): Promise<void> {
    for (let i = 0; !stop; i++) {
      const name = `c${c}-${i}`;
      const idempotencyKey = c % 2 === 0 ? randomUUID() : undefined;
      const res = await fetch(`${gateway.url}/v1/pets`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${key}`,
          "Content-Type": "application/json",
          ...(idempotencyKey && { "Idempotency-Key": idempotencyKey }),
        },
        body: JSON.stringify({ name, categoryId: c + 1 }),
      });
      const text = await res.text();
      let body: Outcome["body"] = text;
      try {
        body = JSON.parse(text) as Outcome["body"];
      } catch {
        // kept as text for the failure message
      }
      outcomes.push({ name, ...(idempotencyKey && { idempotencyKey }), status: res.status, body });
    }
  }

  const running = Array.from({ length: CLIENTS }, (_, c) => client(c));
  try {
    // Round robin: both replicas serve creates (each logs one line per call).
    const served = () => replicas.map((r) => r.output().match(/"rpc":"CreatePet"/g)?.length ?? 0);
    const deadline = Date.now() + 20_000;
    while (served().some((n) => n < BEFORE_KILL) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(served().every((n) => n >= BEFORE_KILL), `creates per replica: ${served()}`).toBe(true);
    await replicas[0]!.kill("SIGKILL");
    await new Promise((r) => setTimeout(r, AFTER_MS));
  } finally {
    stop = true;
    await Promise.all(running);
  }

  const byStatus = new Map<number, number>();
  for (const o of outcomes) byStatus.set(o.status, (byStatus.get(o.status) ?? 0) + 1);
  // How many calls the gateway tried again on the other replica (informative: it depends on how
  // many were in flight on the killed one).
  const retries = await metricValue(`${gateway.url}/metrics`, "gateway_grpc_client_retries_total", { method: "CreatePet" });
  const tally = `${[...byStatus].map(([s, n]) => `${s}×${n}`).join(" ")}, retried ${retries || 0}`;
  if (process.env.REPLICAS_TALLY) console.log(tally);

  expect(outcomes.filter((o) => o.status !== 201), tally).toEqual([]);
  expect(outcomes.length, tally).toBeGreaterThan(CLIENTS * 4);

  // Exactly once: each acknowledged name is stored once, under the id it was acknowledged with,
  // and nothing else was stored.
  const stored = await db.query<{ id: string; name: string }>("SELECT id::text AS id, name FROM pets ORDER BY pets.id");
  const acknowledged = outcomes.map((o) => [String((o.body as { id: number }).id), o.name]).sort((a, b) => (BigInt(a[0]!) < BigInt(b[0]!) ? -1 : 1));
  expect(stored.map((p) => [p.id, p.name])).toEqual(acknowledged);
  // Every create carried a request_id: the clients' keys scoped to the API key, or the gateway's own.
  const stamped = await db.query<{ n: number; generated: number }>(
    "SELECT count(*)::int AS n, count(*) FILTER (WHERE request_id LIKE '@gateway:%')::int AS generated FROM idempotency_keys",
  );
  expect(stamped).toEqual([{ n: outcomes.length, generated: outcomes.filter((o) => !o.idempotencyKey).length }]);
});
