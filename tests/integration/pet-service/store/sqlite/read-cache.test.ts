import { afterEach, describe, expect, it } from "vitest";
import { SqlitePetStore } from "../../../../../pet-service/store/sqlite/store.ts";
import { sideConnection, testDbPath } from "../../../../../testkit/pet-service.ts";

/** Reads held between writes (read-cache.ts) are never staler than a read run again. */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openStore(): Promise<{ store: SqlitePetStore; dbPath: string }> {
  const db = await testDbPath();
  const store = await SqlitePetStore.open(db.dbPath);
  cleanups.push(async () => {
    await store.close();
    await db.remove();
  });
  return { store, dbPath: db.dbPath };
}

describe("SQLite reads between writes", () => {
  it("show a create as soon as it is acknowledged, in a page read just before it", async () => {
    const { store } = await openStore();
    expect(await store.list({ limit: 20 })).toEqual([]);
    expect(await store.get(1n)).toBeUndefined();
    const rex = await store.create({ name: "Rex", categoryId: 1n, status: "available" });
    expect(await store.list({ limit: 20 })).toEqual([rex]);
    expect(await store.get(rex.id)).toEqual(rex);
  });

  it("show what another connection committed to the file (another process, an operator's shell)", async () => {
    const { store, dbPath } = await openStore();
    const other = await SqlitePetStore.open(dbPath);
    cleanups.push(() => other.close());
    expect(await store.list({ limit: 20, status: "sold" })).toEqual([]);
    const tom = await other.create({ name: "Tom", categoryId: 2n, status: "sold" });
    expect(await store.list({ limit: 20, status: "sold" })).toEqual([tom]);

    const side = await sideConnection(dbPath);
    cleanups.push(() => side.close());
    await side.exec("UPDATE pets SET name = 'Tom II'");
    expect(await store.list({ limit: 20, status: "sold" })).toEqual([{ ...tom, name: "Tom II" }]);
    expect(await store.get(tom.id)).toEqual({ ...tom, name: "Tom II" });
  });
});
