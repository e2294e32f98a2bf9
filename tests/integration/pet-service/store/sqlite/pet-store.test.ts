import { describe, expect, it } from "vitest";
import type { PetStore } from "../../../../../pet-service/store/pet-store.ts";
import { SqlitePetStore, SQLITE_STATEMENTS } from "../../../../../pet-service/store/sqlite/store.ts";
import { sqliteTransferTarget } from "../../../../../pet-service/store/sqlite/transfer.ts";
import { sideConnection, testDbPath } from "../../../../../testkit/pet-service.ts";
import { petStoreConformance } from "../conformance.ts";

petStoreConformance("SQLite", async () => {
  const db = await testDbPath();
  let store = await SqlitePetStore.open(db.dbPath);
  const replicas: PetStore[] = [];
  return {
    store,
    async reopen() {
      await store.close();
      store = await SqlitePetStore.open(db.dbPath);
      return store;
    },
    // A second writer on the file: SQLite serialises it with the first on the file lock.
    async replica() {
      const replica = await SqlitePetStore.open(db.dbPath);
      replicas.push(replica);
      return replica;
    },
    async moveIdsPast(id) {
      const target = await sqliteTransferTarget(db.dbPath);
      await target.moveIdsPast(id);
      await target.commit();
    },
    async destroy() {
      await Promise.all([store, ...replicas].map((s) => s.close()));
      await db.remove();
    },
    async holdWriteLock() {
      const side = await sideConnection(db.dbPath);
      await side.exec("BEGIN EXCLUSIVE"); // held past the store's busy_timeout (5 s)
      return async () => {
        await side.exec("ROLLBACK");
        await side.close();
      };
    },
  };
});

describe("SQLite keyset paging", () => {
  it("reads each page as an index range in id order: no sort, no scan of the pets before it", async () => {
    const db = await testDbPath();
    const store = await SqlitePetStore.open(db.dbPath);
    const side = await sideConnection(db.dbPath);
    try {
      const plan = async (sql: string, params: unknown[]) =>
        (await side.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((row) => row.detail);
      // The primary key for every status; (status, id) for one: both already in id order.
      // One line each: no "USE TEMP B-TREE FOR ORDER BY", no SCAN.
      expect(await plan(SQLITE_STATEMENTS.list, ["41", 21])).toEqual(["SEARCH pets USING INTEGER PRIMARY KEY (rowid>?)"]);
      expect(await plan(SQLITE_STATEMENTS.listByStatus, ["sold", "41", 21])).toEqual([
        "SEARCH pets USING INDEX pets_by_status (status=? AND id>?)",
      ]);
    } finally {
      await side.close();
      await store.close();
      await db.remove();
    }
  });
});
