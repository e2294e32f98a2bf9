import pg from "pg";
import { describe, expect, it } from "vitest";
import { openPetStore } from "../../../../pet-service/store/open-store.ts";
import { openRegistry } from "../../../../keys/registry/open.ts";
import { createTestDatabase } from "../../../../testkit/postgres.ts";
import { registryConformance } from "./conformance.ts";

registryConformance("PostgreSQL", async () => {
  const db = await createTestDatabase();
  const others: { close(): Promise<void> }[] = [];
  const h = {
    registry: await openRegistry(db.url),
    async reopen() {
      await h.registry.close();
      h.registry = await openRegistry(db.url);
      return h.registry;
    },
    async another() {
      const other = await openRegistry(db.url);
      others.push(other);
      return other;
    },
    async migrationVersions() {
      return (await db.query<{ version: number }>("SELECT version FROM key_registry_migrations ORDER BY version")).map((r) => r.version);
    },
    async holdWriteLock() {
      // Another session's EXCLUSIVE lock: reads (ACCESS SHARE) go on, writes wait past lock_timeout.
      const side = new pg.Client({ connectionString: db.url });
      await side.connect();
      await side.query("BEGIN");
      await side.query("LOCK TABLE keys IN EXCLUSIVE MODE");
      return async () => {
        await side.query("ROLLBACK");
        await side.end();
      };
    },
    async destroy() {
      await Promise.all([h.registry, ...others].map((r) => r.close().catch(() => {})));
      await db.drop();
    },
  };
  return h;
});

describe("PostgreSQL: KEYS_DB on PETS_DB's database", () => {
  it("the pet store and the registry migrate side by side, each with its own versions table", async () => {
    const db = await createTestDatabase();
    try {
      const pets = await openPetStore(db.url);
      const registry = await openRegistry(db.url);
      await Promise.all([pets.close(), registry.close()]);
      // Opening both again applies nothing and refuses nothing.
      const [petsAgain, registryAgain] = await Promise.all([openPetStore(db.url), openRegistry(db.url)]);
      await Promise.all([petsAgain.close(), registryAgain.close()]);
      expect((await db.query<{ version: number }>("SELECT max(version) AS version FROM schema_migrations"))[0]!.version).toBeGreaterThan(0);
      expect((await db.query<{ version: number }>("SELECT max(version) AS version FROM key_registry_migrations"))[0]!.version).toBeGreaterThan(0);
    } finally {
      await db.drop();
    }
  });
});
