import { afterAll, afterEach, describe, expect, it } from "vitest";
import { POSTGRES_MIGRATIONS } from "../../../../../pet-service/store/postgres/migrations.ts";
import { PostgresPetStore } from "../../../../../pet-service/store/postgres/store.ts";
import { checkHealth, petClient, spawnPetService, type SpawnedPetService } from "../../../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../../../testkit/postgres.ts";

const databases: TestDatabase[] = [];
const services: SpawnedPetService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.kill("SIGKILL")));
});
afterAll(async () => {
  await Promise.all(databases.map((d) => d.drop()));
});

async function newDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  databases.push(db);
  return db;
}

describe("PostgreSQL versioned migrations", () => {
  it("three replicas started together on an empty database end with one schema, and all serve", { timeout: 60_000 }, async () => {
    const db = await newDatabase();
    const replicas = await Promise.all([0, 1, 2].map(() => spawnPetService({ dbPath: db.url })));
    services.push(...replicas);

    for (const replica of replicas) expect(await checkHealth(replica.address, "petstore.v1.PetService")).toBe("SERVING");
    expect(await db.query("SELECT version, name FROM schema_migrations ORDER BY version")).toEqual(
      POSTGRES_MIGRATIONS.map(({ version, name }) => ({ version, name })),
    );
    expect(await db.query("SELECT count(*)::int AS n FROM secrets")).toEqual([{ n: 1 }]);

    // Exactly one of them migrated; every one logged the version it found at start.
    const lines = replicas.map((r) => r.output().split("\n").filter((l) => l.includes('"schemaVersion"')).map((l) => JSON.parse(l)));
    expect(lines.map((l) => l.length)).toEqual([1, 1, 1]);
    const logged = lines.map(([l]) => ({ version: l.schemaVersion, applied: l.appliedMigrations }));
    expect(logged.filter((l) => l.applied.length > 0)).toEqual([{ version: POSTGRES_MIGRATIONS.length, applied: [1] }]);
    expect(logged.filter((l) => l.applied.length === 0)).toHaveLength(2);

    // One database behind all three: a pet created on one is listed by the others, and a page
    // token from one is accepted by another (one secret).
    const clients = replicas.map((r) => petClient(r.address));
    try {
      await clients[0]!.create({ name: "Rex", categoryId: "1" });
      await clients[1]!.create({ name: "Tom", categoryId: "2" });
      const first = await clients[2]!.page({ limit: 1 });
      expect(first.pets.map((p) => p.name)).toEqual(["Rex"]);
      expect((await clients[0]!.page({ limit: 1, pageToken: first.nextPageToken })).pets.map((p) => p.name)).toEqual(["Tom"]);
    } finally {
      for (const c of clients) c.close();
    }
  });

  it("opens a current database without applying anything, and refuses one newer than the code", async () => {
    const db = await newDatabase();
    await (await PostgresPetStore.open(db.url)).close();
    const again = await PostgresPetStore.open(db.url);
    expect(again.schema).toEqual({ version: POSTGRES_MIGRATIONS.length, applied: [], baselined: false });
    await again.close();
    await db.query("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')");
    await expect(PostgresPetStore.open(db.url)).rejects.toThrow(/schema is at version 99, newer than this release knows/);
  });
});
