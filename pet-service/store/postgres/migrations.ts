import type pg from "pg";
import { applyPending, SCHEMA_MIGRATIONS_TABLE, type Migration, type SchemaReport } from "../../../lib/migrations.ts";

/**
 * The PostgreSQL schema, version by version (never edit a released one: add the next).
 *
 * - `pets.id` is an identity column: its sequence hands out unique, increasing int64 ids and never
 *   the same one twice (NO CYCLE; a rolled-back insert leaves a gap, never a reuse).
 * - `pets_by_status (status, id)` serves a status-filtered page as one index range in id order;
 *   the primary key serves the unfiltered one.
 * - `idempotency_keys.request_id` is the primary key, so a key is unique across every replica;
 *   `created_at` is ms since the epoch from the service's clock, as in SQLite.
 * - `secrets` keeps the page-token secret (created at open, see postgres-pet-store.ts).
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "pets, page-token secret, idempotency keys",
    sql: `
      CREATE TABLE pets (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name        text   NOT NULL,
        category_id bigint NOT NULL CHECK (category_id > 0),
        status      text   NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold'))
      );
      CREATE INDEX pets_by_status ON pets (status, id);
      CREATE TABLE secrets (
        name  text  PRIMARY KEY,
        value bytea NOT NULL CHECK (length(value) >= 16)
      );
      CREATE TABLE idempotency_keys (
        request_id   text   PRIMARY KEY,
        request_hash text   NOT NULL,
        pet_id       bigint NOT NULL REFERENCES pets (id),
        created_at   bigint NOT NULL
      );
      CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
    `,
  },
];

/**
 * The advisory lock every replica takes before looking at the schema (pg_advisory_xact_lock is
 * scoped to the database, so other databases on the server are not held up). An arbitrary
 * constant: "pets" in ASCII.
 */
const MIGRATION_LOCK = 0x70657473;

/**
 * Brings the database to the latest version in one transaction under the advisory lock: replicas
 * starting together on an empty database queue on the lock, the first creates the schema, the
 * others find it current. DDL is transactional in PostgreSQL, so a failed migration leaves
 * nothing behind. Throws when the database is newer than the code.
 */
export async function migratePostgres(pool: pg.Pool, migrations = POSTGRES_MIGRATIONS): Promise<SchemaReport> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${SCHEMA_MIGRATIONS_TABLE} (
         version    integer     PRIMARY KEY,
         name       text        NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${SCHEMA_MIGRATIONS_TABLE}`);
    const applied = await applyPending(migrations, rows[0]!.version, async (migration) => {
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${SCHEMA_MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
    });
    await client.query("COMMIT");
    return { version: migrations.length, applied, baselined: false };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
