import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openSqlite } from "../../../../lib/sqlite.ts";
import { openRegistry } from "../../../../keys/registry/open.ts";
import { registryConformance } from "./conformance.ts";

registryConformance("SQLite", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-registry-"));
  const file = path.join(dir, "nested", "keys.sqlite");
  const others: { close(): Promise<void> }[] = [];
  const h = {
    registry: await openRegistry(file),
    async reopen() {
      await h.registry.close();
      h.registry = await openRegistry(file);
      return h.registry;
    },
    async another() {
      const other = await openRegistry(file);
      others.push(other);
      return other;
    },
    async migrationVersions() {
      const db = openSqlite(file, { readOnly: true });
      try {
        return db.prepare("SELECT version FROM key_registry_migrations ORDER BY version").all().map((r) => Number(r.version));
      } finally {
        db.close();
      }
    },
    async holdWriteLock() {
      const side = openSqlite(file);
      side.exec("BEGIN IMMEDIATE");
      return async () => {
        side.exec("ROLLBACK");
        side.close();
      };
    },
    async destroy() {
      await Promise.all([h.registry, ...others].map((r) => r.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
});
