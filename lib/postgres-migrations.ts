import type pg from "pg";
import { applyPending, SCHEMA_MIGRATIONS_TABLE, type Migration, type SchemaReport } from "./migrations.ts";

/**
 * Brings a PostgreSQL database to the latest of `migrations` in one transaction under the
 * advisory lock `lock` (pg_advisory_xact_lock is scoped to the database, so other databases on
 * the server are not held up): replicas starting together on an empty database queue on the
 * lock, the first creates the schema, the others find it current. DDL is transactional in
 * PostgreSQL, so a failed migration leaves nothing behind. Throws when the database is newer
 * than the code. `table` records the versions: each schema sharing a database has its own.
 */
export async function migratePostgresSchema(
  pool: pg.Pool,
  migrations: readonly Migration[],
  lock: number,
  table: string = SCHEMA_MIGRATIONS_TABLE,
): Promise<SchemaReport> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [lock]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${table} (
         version    integer     PRIMARY KEY,
         name       text        NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${table}`);
    const applied = await applyPending(migrations, rows[0]!.version, async (migration) => {
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${table} (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
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
