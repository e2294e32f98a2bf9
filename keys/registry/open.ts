import { isPostgresUrl } from "../../pet-service/store/pets-db-url.ts";
import { PostgresKeyRegistry } from "./postgres/store.ts";
import { SqliteKeyRegistry } from "./sqlite/store.ts";
import type { KeyRegistry } from "./store.ts";

export interface OpenRegistryOptions {
  /** PostgreSQL only: connections in the pool, at most. */
  poolSize?: number;
  /** PostgreSQL only: an idle pooled connection broke (the server restarted); the pool opens another. */
  onIdleError?: (err: Error) => void;
}

/**
 * The registry KEYS_DB names, open and migrated to the latest schema: a `postgres://` or
 * `postgresql://` URL → PostgreSQL; anything else is a SQLite file path.
 */
export function openRegistry(dbUrlOrPath: string, options: OpenRegistryOptions = {}): Promise<KeyRegistry> {
  if (isPostgresUrl(dbUrlOrPath)) return PostgresKeyRegistry.open(dbUrlOrPath, options);
  return SqliteKeyRegistry.open(dbUrlOrPath);
}
