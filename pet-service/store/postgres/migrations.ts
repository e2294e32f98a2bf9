import type pg from "pg";
import type { Migration, SchemaReport } from "../../../lib/migrations.ts";
import { migratePostgresSchema } from "../../../lib/postgres-migrations.ts";

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

/** Brings the database to the latest version (lib/postgres-migrations.ts). */
export function migratePostgres(pool: pg.Pool, migrations = POSTGRES_MIGRATIONS): Promise<SchemaReport> {
  return migratePostgresSchema(pool, migrations, MIGRATION_LOCK);
}
