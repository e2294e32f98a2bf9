import type { DatabaseSync } from "node:sqlite";
import { pendingMigrations, SCHEMA_MIGRATIONS_TABLE, type Migration, type SchemaReport } from "./migrations.ts";
import { withResultCode } from "./sqlite.ts";

/**
 * Brings a SQLite file to the latest of `migrations` in one write transaction (BEGIN IMMEDIATE: a
 * second process opening the file waits for it). `isBaseline` is asked, for a file without
 * `schema_migrations`, whether its tables were made before versioned migrations (then version 1,
 * written to change nothing on such a file, is recorded as its baseline); it may throw to refuse
 * tables that are not ours. `table` records the versions (one per schema sharing a database).
 * Throws when the file is newer than the code.
 */
export function migrateSqliteSchema(
  db: DatabaseSync,
  migrations: readonly Migration[],
  isBaseline: (tables: ReadonlySet<unknown>) => boolean = () => false,
  table: string = SCHEMA_MIGRATIONS_TABLE,
): SchemaReport {
  try {
    db.exec("BEGIN IMMEDIATE");
    const tables = new Set(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all().map((t) => t.name));
    const baselined = !tables.has(table) && isBaseline(tables);
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (
         version    INTEGER PRIMARY KEY,
         name       TEXT    NOT NULL,
         applied_at TEXT    NOT NULL,
         baseline   INTEGER NOT NULL DEFAULT 0
       ) STRICT;`,
    );
    const current = Number(db.prepare(`SELECT max(version) AS version FROM ${table}`).get()?.version ?? 0);
    const record = db.prepare(`INSERT INTO ${table} (version, name, applied_at, baseline) VALUES (?, ?, ?, ?)`);
    const applied = pendingMigrations(migrations, current).map((migration) => {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, new Date().toISOString(), baselined && migration.version === 1 ? 1 : 0);
      return migration.version;
    });
    db.exec("COMMIT");
    return { version: migrations.length, applied, baselined };
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw withResultCode(err);
  }
}
