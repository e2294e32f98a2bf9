import { afterEach, describe, expect, it } from "vitest";
import { createPetServiceMetrics } from "../../../../../pet-service/metrics.ts";
import { IDEMPOTENCY_TTL_MS, requestHash } from "../../../../../pet-service/idempotency.ts";
import type { IdempotencyKey, NewPet } from "../../../../../pet-service/store/pet-store.ts";
import { SqlitePetStore } from "../../../../../pet-service/store/sqlite/store.ts";
import { openSqlite } from "../../../../../lib/sqlite.ts";
import { sideConnection, testDbPath } from "../../../../../testkit/pet-service.ts";

/** Group commit in the SQLite store: concurrent creates share one transaction (one fsync). */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openStore(opts: { metrics?: ReturnType<typeof createPetServiceMetrics> } = {}) {
  const db = await testDbPath();
  const store = await SqlitePetStore.open(db.dbPath, opts);
  let closed = false;
  const close = async () => {
    if (!closed) await store.close();
    closed = true;
  };
  cleanups.push(async () => {
    await close();
    await db.remove();
  });
  return { store, dbPath: db.dbPath, close };
}

/** A query on a connection of its own (committed data only). */
async function query<T>(dbPath: string, sql: string): Promise<T[]> {
  const db = openSqlite(dbPath);
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

const pet = (name: string, categoryId = 1n): NewPet => ({ name, categoryId, status: "available" });
/** Violates the table's CHECK (category_id > 0): the store refuses it with a constraint error. */
const bad = (name: string): NewPet => ({ name, categoryId: 0n, status: "available" });
const key = (requestId: string, p: NewPet, now = Date.now()): IdempotencyKey => ({
  requestId,
  requestHash: requestHash(p),
  now,
  expiredAt: now - IDEMPOTENCY_TTL_MS,
});

describe("group commit", () => {
  it("commits concurrent creates together, acknowledging each only once its commit is visible", async () => {
    const { store } = await openStore();
    const created = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        store.create(pet(`g${i}`)).then(async (p) => {
          // The reader connection sees committed data only: the pet is there at acknowledgement.
          expect(await store.get(p.id)).toEqual(p);
          return p;
        }),
      ),
    );
    expect(new Set(created.map((p) => p.id)).size).toBe(100);
    const { commits, writes } = store.commitStats();
    expect(writes).toBe(100);
    expect(commits).toBeLessThanOrEqual(2); // one batch (a second only if the first started early)
    expect(await store.list({ limit: 100 })).toHaveLength(100);
  });

  it("keeps creating one at a time correctly: a lone create is its own commit", async () => {
    const { store } = await openStore();
    for (let i = 0; i < 3; i++) await store.create(pet(`single${i}`));
    expect(store.commitStats()).toEqual({ commits: 3, writes: 3 });
  });

  it("fails only the bad create of a batch; the rest commit, and survive a reopen", async () => {
    const { store, dbPath, close } = await openStore();
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 10 }, (_, i) => store.create(pet(`ok${i}`))),
      store.create(bad("bad")),
      ...Array.from({ length: 10 }, (_, i) => store.create(pet(`ok${10 + i}`))),
    ]);
    expect(outcomes[10]).toMatchObject({ status: "rejected", reason: { code: "SQLITE_CONSTRAINT" } });
    const good = outcomes.filter((o) => o.status === "fulfilled");
    expect(good).toHaveLength(20);
    expect(store.commitStats().commits).toBeLessThanOrEqual(2);
    await close();

    const reopened = await SqlitePetStore.open(dbPath);
    try {
      const names = (await reopened.list({ limit: 100 })).map((p) => p.name);
      expect(names).toEqual(Array.from({ length: 20 }, (_, i) => `ok${i}`));
    } finally {
      await reopened.close();
    }
  });

  it("rolls back a failing idempotent create to its savepoint: neither its pet nor its key is kept", async () => {
    const { store } = await openStore();
    const good = pet("keyed");
    const [refused, created, plain, replayed] = await Promise.allSettled([
      store.createOnce(bad("keyed-bad"), key("k-bad", bad("keyed-bad"))),
      store.createOnce(good, key("k-good", good)),
      store.create(pet("plain")),
      store.createOnce(good, key("k-good", good)),
    ]);
    expect(refused.status).toBe("rejected");
    expect(created).toMatchObject({ status: "fulfilled", value: { outcome: "created" } });
    expect(plain.status).toBe("fulfilled");
    // The same key later in the same batch already sees the first one's pet.
    expect(replayed).toMatchObject({ status: "fulfilled", value: { outcome: "replayed" } });
    if (created.status === "fulfilled" && replayed.status === "fulfilled" && created.value.outcome === "created") {
      expect(replayed.value).toEqual({ outcome: "replayed", pet: created.value.pet });
    }
    // The refused key left nothing behind: it is free for a valid request now.
    const retry = pet("keyed-retry");
    expect(await store.createOnce(retry, key("k-bad", retry))).toMatchObject({ outcome: "created" });
    expect((await store.list({ limit: 10 })).map((p) => p.name)).toEqual(["keyed", "plain", "keyed-retry"]);
  });

  it("undoes a failing create's earlier statements too (its savepoint), not only the failed one", async () => {
    const { store, dbPath } = await openStore();
    const old = pet("old");
    await store.createOnce(old, key("k-old", old, Date.now() - IDEMPOTENCY_TTL_MS - 1_000)); // already expired
    const keys = () => query<{ request_id: string }>(dbPath, "SELECT request_id FROM idempotency_keys");
    expect(await keys()).toEqual([{ request_id: "k-old" }]);
    // This create first deletes expired keys (k-old among them), then fails on its insert: the
    // deletion is rolled back with it.
    await expect(store.createOnce(bad("x"), key("k-x", bad("x")))).rejects.toMatchObject({ code: "SQLITE_CONSTRAINT" });
    expect(await keys()).toEqual([{ request_id: "k-old" }]);
  });

  it("keeps the event loop free while a create waits for the lock: reads and timers go on, the create fails busy after busy_timeout", { timeout: 20_000 }, async () => {
    const { store, dbPath } = await openStore();
    const kept = await store.create(pet("kept"));
    const side = await sideConnection(dbPath);
    await side.exec("BEGIN EXCLUSIVE"); // held past the writer's busy_timeout (5 s)
    try {
      const order: string[] = [];
      const create = store.create(pet("locked out")).then(
        () => order.push("create stored"),
        (err: unknown) => order.push(`create refused: ${(err as { fault?: string }).fault}`),
      );
      // The writer thread waits for the lock; this thread answers meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 100));
      order.push("timer");
      expect(await store.list({ limit: 10 })).toEqual([kept]);
      order.push("read");
      await create;
      expect(order).toEqual(["timer", "read", "create refused: busy"]);
    } finally {
      await side.exec("ROLLBACK");
      await side.close();
    }
  });

  it("counts creates per commit in pet_service_sqlite_writes_per_commit", async () => {
    const metrics = createPetServiceMetrics();
    const { store } = await openStore({ metrics });
    await Promise.all(Array.from({ length: 30 }, (_, i) => store.create(pet(`m${i}`))));
    const { values } = await metrics.sqliteWritesPerCommit.get();
    const count = values.find((v) => v.metricName === "pet_service_sqlite_writes_per_commit_count")?.value;
    const sum = values.find((v) => v.metricName === "pet_service_sqlite_writes_per_commit_sum")?.value;
    expect(count).toBe(store.commitStats().commits);
    expect(sum).toBe(30);
  });

  it("commits what was queued before close(), and refuses creates after it", async () => {
    const { store, dbPath, close } = await openStore();
    const pending = Array.from({ length: 5 }, (_, i) => store.create(pet(`late${i}`)));
    const closed = close();
    await expect(store.create(pet("after"))).rejects.toThrow(/closed/);
    expect(await Promise.all(pending)).toHaveLength(5);
    await closed;
    const reopened = await SqlitePetStore.open(dbPath);
    try {
      expect(await reopened.list({ limit: 10 })).toHaveLength(5);
    } finally {
      await reopened.close();
    }
  });
});
