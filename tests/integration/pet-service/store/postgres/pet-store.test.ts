import { Writable } from "node:stream";
import pg from "pg";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { StorageUnavailableError } from "../../../../../lib/storage-faults.ts";
import type { PetStore } from "../../../../../pet-service/store/pet-store.ts";
import { POSTGRES_STATEMENTS, PostgresPetStore } from "../../../../../pet-service/store/postgres/store.ts";
import { postgresTransferTarget } from "../../../../../pet-service/store/postgres/transfer.ts";
import { createTestDatabase, type TestDatabase } from "../../../../../testkit/postgres.ts";
import { startTcpProxy, viaProxy, type TcpProxy } from "../../../../../testkit/tcp-proxy.ts";
import { petStoreConformance } from "../conformance.ts";

petStoreConformance("PostgreSQL", async () => {
  const db = await createTestDatabase();
  let store = await PostgresPetStore.open(db.url);
  const replicas: PetStore[] = [];
  return {
    store,
    async reopen() {
      await store.close();
      store = await PostgresPetStore.open(db.url);
      return store;
    },
    async replica() {
      const replica = await PostgresPetStore.open(db.url);
      replicas.push(replica);
      return replica;
    },
    async moveIdsPast(id) {
      const target = await postgresTransferTarget(db.url);
      await target.moveIdsPast(id);
      await target.commit();
    },
    async destroy() {
      await Promise.all([store, ...replicas].map((s) => s.close()));
      await db.drop();
    },
    async holdWriteLock() {
      // Another session's EXCLUSIVE lock: reads (ACCESS SHARE) go on, writes wait past lock_timeout.
      const side = new pg.Client({ connectionString: db.url });
      await side.connect();
      await side.query("BEGIN");
      await side.query("LOCK TABLE pets IN EXCLUSIVE MODE");
      return async () => {
        await side.query("ROLLBACK");
        await side.end();
      };
    },
  };
});

describe("PostgreSQL keyset paging", () => {
  let db: TestDatabase;
  let store: PostgresPetStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await PostgresPetStore.open(db.url);
    // A realistic table (the planner picks by statistics): 20,000 pets, most available, few sold.
    await db.query(
      `INSERT INTO pets (name, category_id, status)
       SELECT 'pet ' || i, 1 + i % 7, CASE WHEN i % 50 = 0 THEN 'sold' WHEN i % 5 = 0 THEN 'pending' ELSE 'available' END
         FROM generate_series(1, 20000) AS i`,
    );
    await db.query("ANALYZE pets");
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  /** The plan's nodes, outermost first: [node type, index name, index condition]. */
  async function plan(sql: string, values: unknown[], generic: boolean): Promise<[string, string?, string?][]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      // The store's statements are prepared (named): after five runs PostgreSQL may switch to the
      // generic plan, so both plans must be index ranges.
      await client.query(`SET plan_cache_mode = ${generic ? "force_generic_plan" : "force_custom_plan"}`);
      await client.query(`PREPARE q AS ${sql}`);
      const literals = values.map((v) => (typeof v === "number" ? String(v) : `'${String(v)}'`)).join(", ");
      const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE q(${literals})`);
      const nodes: [string, string?, string?][] = [];
      for (let node: PlanNode | undefined = rows[0]!["QUERY PLAN"][0].Plan; node; node = node.Plans?.[0]) {
        nodes.push(node["Index Name"] ? [node["Node Type"], node["Index Name"], node["Index Cond"]] : [node["Node Type"]]);
      }
      return nodes;
    } finally {
      await client.end();
    }
  }
  interface PlanNode {
    "Node Type": string;
    "Index Name"?: string;
    "Index Cond"?: string;
    Plans?: PlanNode[];
  }

  // Deep in the table, as the 900th page of 21 would be. Limit over one index scan that starts at
  // the position (an index condition on id): no Sort node, no Seq Scan, nothing read before it.
  it.each([false, true])("reads each page as an index range in id order (generic plan: %s)", async (generic) => {
    // The generic plan shows the parameter ($1) instead of the value.
    const position = generic ? /id > \$\d/ : /id > '18900'::bigint/;
    expect(await plan(POSTGRES_STATEMENTS.list, ["18900", 21], generic)).toEqual([["Limit"], ["Index Scan", "pets_pkey", expect.stringMatching(position)]]);
    for (const status of ["available", "pending", "sold"]) {
      const [limit, scan, ...rest] = await plan(POSTGRES_STATEMENTS.listByStatus, [status, "18900", 21], generic);
      expect([limit, rest]).toEqual([["Limit"], []]);
      // A common status may be read along the primary key (its rows are dense there); either way
      // the scan starts at the position and yields id order.
      expect(scan![0]).toBe("Index Scan");
      expect(scan![2]).toMatch(position);
    }
  });

  it("serves a rare status from (status, id), not by filtering the primary key", async () => {
    expect(await plan(POSTGRES_STATEMENTS.listByStatus, ["sold", "0", 21], false)).toEqual([
      ["Limit"],
      ["Index Scan", "pets_by_status", "((status = 'sold'::text) AND (id > '0'::bigint))"],
    ]);
  });
});

describe("PostgreSQL under load", () => {
  let db: TestDatabase;
  let store: PostgresPetStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await PostgresPetStore.open(db.url, { poolSize: 1 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  // Every pooled connection busy (here: the only one, on a create waiting for another session's
  // lock) makes the next call wait for one; past connectionTimeoutMillis pg-pool gives up on it.
  // The database answered all along: that wait is load, not an unreachable database (which would
  // take the replica out of rotation and fail every call).
  it("a call that waits too long for a pooled connection is busy, not unreachable", { timeout: 20_000 }, async () => {
    const side = new pg.Client({ connectionString: db.url });
    await side.connect();
    await side.query("BEGIN");
    await side.query("LOCK TABLE pets IN EXCLUSIVE MODE");
    try {
      const blocked = store.create({ name: "Blocked", categoryId: 1n, status: "available" }).catch((err: unknown) => err);
      const waited = await store.list({ limit: 1 }).catch((err: unknown) => err);
      expect(waited).toBeInstanceOf(StorageUnavailableError);
      expect(waited).toMatchObject({ fault: "busy" });
      await blocked;
    } finally {
      await side.query("ROLLBACK");
      await side.end();
    }
    expect(await store.list({ limit: 1 })).toEqual([]);
  });

  // statement_timeout (5 s) cancels a statement the server cannot finish in time (load, a stalled
  // disk; here a trigger that sleeps): the database cannot serve it now, which is no bug of ours.
  it("a statement stopped by statement_timeout is busy (UNAVAILABLE), not an unexpected error, and stored nothing", { timeout: 20_000 }, async () => {
    await db.query("CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(6); RETURN NEW; END $$");
    await db.query("CREATE TRIGGER stall BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION stall()");
    try {
      const stopped = await store.create({ name: "Stalled", categoryId: 1n, status: "available" }).catch((err: unknown) => err);
      expect(stopped).toBeInstanceOf(StorageUnavailableError);
      expect(stopped).toMatchObject({ fault: "busy", cause: { code: "57014" } });
    } finally {
      await db.query("DROP TRIGGER stall ON pets");
    }
    expect(await store.list({ limit: 1 })).toEqual([]);
  });
});

describe("PostgreSQL connection pool", () => {
  let db: TestDatabase;
  let proxy: TcpProxy | undefined;
  let store: PostgresPetStore | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await store?.close();
    await proxy?.close();
    [store, proxy] = [undefined, undefined];
  });
  afterAll(async () => {
    await db?.drop();
  });

  const ourConnections = async () =>
    (await db.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'pet-service'", [db.name]))[0]!.n;

  it("opens all PETS_DB_POOL_SIZE connections at start", async () => {
    store = await PostgresPetStore.open(db.url, { poolSize: 4 });
    expect(await ourConnections()).toBe("4");
  });

  // pg-pool holds a call that finds every connection busy on a NEW connection while the pool has
  // room; a database slow to accept connections then failed calls that a connection freed a
  // moment later could have served (504s in the compose test when a replica was killed).
  it("with every connection busy, calls wait for one of them, not for a new connection that hangs", { timeout: 20_000 }, async () => {
    proxy = await startTcpProxy({ host: "127.0.0.1", port: 5432 });
    store = await PostgresPetStore.open(viaProxy(db.url, proxy), { poolSize: 3 });
    proxy.stallNew();
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => store!.list({ limit: 1 })));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
  });

  it("starts with the connections it could open and says so when the server has no room for all", async () => {
    proxy = await startTcpProxy({ host: "127.0.0.1", port: 5432 }, { maxConnections: 2 });
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, new Writable({ write: (chunk: Buffer, _enc, done) => done(void lines.push(chunk.toString())) }));
    store = await PostgresPetStore.open(viaProxy(db.url, proxy), { poolSize: 5, logger });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ msg: "database pool not filled at start", opened: 2, size: 5 }),
    ]);
    // One call after another: each finds one of the two connections idle.
    for (let i = 0; i < 6; i++) expect(await store.list({ limit: 1 })).toEqual([]);
  });
});
