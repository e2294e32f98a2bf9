import pg from "pg";
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
      return (await db.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).map((r) => r.version);
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
