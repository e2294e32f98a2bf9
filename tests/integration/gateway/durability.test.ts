import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openSqlite } from "../../../lib/sqlite.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../../../testkit/net.ts";
import { spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";

// The pet service is SIGKILLed under 16 concurrent creates through the gateway, then restarted
// on the same port and database. Every create that got 201 must survive, no id may be reused,
// the gateway must answer Error bodies (503/504) meanwhile, never drop a connection or answer
// 500, and must find the restarted service by itself.

const WORKERS = 16;
/** Acknowledged creates before the kill (however long a loaded machine takes to get there). */
const UP_CREATES = 3 * WORKERS;
/** How long the pet service stays down before it is started again (its start-up time adds to it). */
const DOWN_MS = 1_000;
/** Bound on the gateway's recovery after the pet service is SERVING again. */
const RECOVERY_MS = 5_000;

let dir: string;
let dbPath: string;
let port: number;
let keys: TestKeys;
let gateway: RunningGateway;
let pets: SpawnedPetService | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "petstore-durability-"));
  dbPath = path.join(dir, "pets.sqlite");
  port = await freePort();
  keys = await createTestKeys();
  pets = await spawnPetService({ port, dbPath });
  gateway = await startGateway({ petServiceAddr: `127.0.0.1:${port}`, keys });
});

afterAll(async () => {
  await gateway?.close();
  await pets?.kill("SIGKILL");
  await keys?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Phase = "up" | "down" | "restarted";

interface Outcome {
  worker: number;
  name: string;
  phase: Phase;
  /** HTTP status, or 0 when the fetch rejected (a dropped connection). */
  status: number;
  body: unknown;
  error?: string;
}

/** Every row of the pets table, read from the SQLite file itself (ListPets stops at 100). */
async function storedPets(file: string): Promise<{ id: string; name: string }[]> {
  const db = openSqlite(file, { readOnly: true });
  try {
    return db.prepare("SELECT CAST(id AS TEXT) AS id, name FROM pets ORDER BY id").all() as { id: string; name: string }[];
  } finally {
    db.close();
  }
}

it("keeps every acknowledged create across a SIGKILL of the pet service, and recovers by itself", { timeout: 30_000 }, async () => {
  const key = await keys.issue({ plan: "enterprise", perMinute: 100_000, perDay: 1_000_000 });
  const outcomes: Outcome[] = [];
  let phase: Phase = "up";
  let stop = false;
  /** Per worker: has it seen a 201 since the restarted pet service reported SERVING? */
  const recovered = new Array<boolean>(WORKERS).fill(false);

  async function worker(w: number): Promise<void> {
    for (let i = 0; !stop && !recovered[w]; i++) {
      const name = `w${w}-${i}`;
      const sentIn = phase;
      let outcome: Outcome;
      try {
        const res = await fetch(`${gateway.url}/v1/pets`, {
          method: "POST",
          headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
          body: JSON.stringify({ name, categoryId: w + 1 }),
        });
        const text = await res.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // kept as text; the assertions below report it
        }
        outcome = { worker: w, name, phase: sentIn, status: res.status, body };
      } catch (err) {
        outcome = { worker: w, name, phase: sentIn, status: 0, body: undefined, error: String((err as Error).cause ?? err) };
      }
      outcomes.push(outcome);
      if (outcome.status === 201 && sentIn === "restarted") recovered[w] = true;
      // While the service is down the gateway answers at once; do not spin.
      if (outcome.status !== 201) await new Promise((r) => setTimeout(r, 20));
    }
  }

  const running = Array.from({ length: WORKERS }, (_, w) => worker(w));
  try {
    const upDeadline = Date.now() + 15_000;
    while (outcomes.filter((o) => o.status === 201).length < UP_CREATES && Date.now() < upDeadline) await new Promise((r) => setTimeout(r, 20));
    phase = "down";
    await pets!.kill("SIGKILL");
    await new Promise((r) => setTimeout(r, DOWN_MS));
    pets = await spawnPetService({ port, dbPath });
    phase = "restarted";
    const deadline = Date.now() + RECOVERY_MS;
    while (!recovered.every(Boolean) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  } finally {
    stop = true;
    await Promise.all(running);
  }

  // e.g. "up 201×812 503×16 · down 503×640 · restarted 503×30 201×16": in every failure message.
  const tally = (["up", "down", "restarted"] as const)
    .map((p) => {
      const counts = new Map<number, number>();
      for (const o of outcomes) if (o.phase === p) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
      return `${p} ${[...counts].map(([status, n]) => `${status}×${n}`).join(" ")}`;
    })
    .join(" · ");
  if (process.env.DURABILITY_TALLY) console.log(tally);

  // No dropped connections.
  expect(outcomes.filter((o) => o.status === 0), tally).toEqual([]);
  // Every answer is a 201 Pet, or a 503/504 Error body; never a 500.
  const created = outcomes.filter((o) => o.status === 201);
  const refused = outcomes.filter((o) => o.status !== 201);
  for (const o of refused) {
    expect([503, 504], `${JSON.stringify(o)} (${tally})`).toContain(o.status);
    expect(o.body, JSON.stringify(o)).toMatchObject({
      code: o.status === 503 ? "service_unavailable" : "upstream_timeout",
      message: expect.any(String),
      status: o.status,
    });
  }
  for (const o of created) expect(o.body).toMatchObject({ id: expect.any(Number), name: o.name, categoryId: o.worker + 1 });
  // The outage was observed, creates succeeded before it, and every worker got 201s again after it.
  expect(created.filter((o) => o.phase === "up").length, tally).toBeGreaterThan(WORKERS);
  expect(refused.filter((o) => o.phase === "down").length, tally).toBeGreaterThan(0);
  expect(recovered, tally).toEqual(new Array(WORKERS).fill(true));

  // Durability: every acknowledged create is stored under the id it was acknowledged with.
  const ids = created.map((o) => String((o.body as { id: number }).id));
  expect(new Set(ids).size).toBe(ids.length);
  const stored = new Map((await storedPets(dbPath)).map((p) => [p.id, p.name]));
  const missing = created.filter((o) => stored.get(String((o.body as { id: number }).id)) !== o.name);
  expect(missing).toEqual([]);
  // Creates refused with 503/504 may or may not have been committed (the answer was lost with
  // the process), but none of them took the id of an acknowledged one: checked above by name.
  const acknowledgedAfter = created.filter((o) => o.phase === "restarted").map((o) => (o.body as { id: number }).id);
  const acknowledgedBefore = created.filter((o) => o.phase === "up").map((o) => (o.body as { id: number }).id);
  expect(Math.min(...acknowledgedAfter)).toBeGreaterThan(Math.max(...acknowledgedBefore));
});
