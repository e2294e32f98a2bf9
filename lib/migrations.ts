/**
 * Versioned schema migrations, shared by both stores. Each store lists its migrations (versions
 * 1, 2, … in order, never edited once released) and applies the missing ones at open, inside one
 * transaction that holds the database's lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory
 * lock), so replicas starting together end with one schema. A versions table per schema
 * (`schema_migrations` for pets, `key_registry_migrations` for keys) records each applied version.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** What opening a database did to its schema; main logs it at start. */
export interface SchemaReport {
  /** The version the database is at now. */
  version: number;
  /** Versions applied by this open (empty when the schema was already current). */
  applied: number[];
  /** True when a database made before versioned migrations was recognised and recorded at version 1. */
  baselined: boolean;
}

/**
 * Applies the migrations of `all` above `current` in order with `apply` (which runs the SQL and
 * records the version, in the caller's transaction); returns the versions applied.
 */
export async function applyPending(all: readonly Migration[], current: number, apply: (migration: Migration) => Promise<void>): Promise<number[]> {
  const applied: number[] = [];
  for (const migration of pendingMigrations(all, current)) {
    await apply(migration);
    applied.push(migration.version);
  }
  return applied;
}

/** The migrations of `all` above `current`, after checking that the code knows the database's version. */
export function pendingMigrations(all: readonly Migration[], current: number): Migration[] {
  all.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration ${m.name} has version ${m.version}, expected ${i + 1}`);
  });
  const latest = all.length;
  if (current > latest) {
    throw new Error(`the database schema is at version ${current}, newer than this release knows (${latest}): run a newer release`);
  }
  return all.slice(current);
}

/** The pet store's versions table (its name predates the key registry, which has its own). */
export const SCHEMA_MIGRATIONS_TABLE = "schema_migrations";
/** The key registry's versions table: KEYS_DB may be the same PostgreSQL database as PETS_DB. */
export const REGISTRY_MIGRATIONS_TABLE = "key_registry_migrations";
