import type { DatabaseSync } from "node:sqlite";
import type { Migration, SchemaReport } from "../../../lib/migrations.ts";
import { migrateSqliteSchema } from "../../../lib/sqlite-migrations.ts";

/**
 * The SQLite schema, version by version. Version 1 is the schema that databases made before
 * versioned migrations already have, written with IF NOT EXISTS / OR IGNORE throughout: on such a
 * database it changes nothing (or adds the tables an even older release lacked), so it doubles
 * as the baseline. Later versions are plain statements, applied exactly once.
 *
 * AUTOINCREMENT: ids are never reused, even after the highest row is deleted. Idempotency keys
 * sit beside the pets so a key and its pet are written in one transaction; `created_at` is in ms
 * since the epoch, from the service's clock; `pet_id` is the pet created.
 */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "pets, page-token secret, idempotency keys",
    sql: `
      CREATE TABLE IF NOT EXISTS pets (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        name        TEXT    NOT NULL,
        category_id INTEGER NOT NULL CHECK (category_id > 0),
        status      TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
      ) STRICT;
      CREATE INDEX IF NOT EXISTS pets_by_status ON pets (status, id);
      CREATE TABLE IF NOT EXISTS secrets (
        name  TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) STRICT;
      INSERT OR IGNORE INTO secrets (name, value) VALUES ('page_token', randomblob(32));
      CREATE TABLE IF NOT EXISTS idempotency_keys (
        request_id   TEXT    PRIMARY KEY,
        request_hash TEXT    NOT NULL,
        pet_id       INTEGER NOT NULL REFERENCES pets (id),
        created_at   INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
    `,
  },
];

const PET_COLUMNS = ["id", "name", "category_id", "status"];

/**
 * Brings the database to the latest version (lib/sqlite-migrations.ts). A database without
 * `schema_migrations` but with a `pets` table of ours was made before versioned migrations: it is
 * baselined at version 1, its rows, ids and page-token secret untouched. Throws when the file is
 * newer than the code, or holds a `pets` table that is not ours.
 */
export function migrateSqlite(db: DatabaseSync, migrations = SQLITE_MIGRATIONS): SchemaReport {
  return migrateSqliteSchema(db, migrations, (tables) => {
    if (!tables.has("pets")) return false;
    const columns = db.prepare("SELECT name FROM pragma_table_info('pets') ORDER BY cid").all().map((c) => c.name);
    if (columns.join() !== PET_COLUMNS.join()) {
      throw new Error(`the database has a pets table with columns (${columns.join(", ")}) that this pet service did not create`);
    }
    return true;
  });
}
