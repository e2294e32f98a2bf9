import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * The PostgreSQL server tests use: the machine's (127.0.0.1:5432, user postgres, trust auth;
 * scripts/test-deps.sh makes sure it runs), or PG_TEST_URL. Each test file creates databases of its own,
 * named pets_test_<random>, and drops them at the end; it never touches another database.
 */
const PG_ADMIN_URL = process.env.PG_TEST_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  name: string;
  /** postgres://…/<name> */
  url: string;
  /** Runs one statement on the database (as the admin user), for tests that reach around the store. */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<T[]>;
  /** Drops it, closing every connection still on it (WITH (FORCE)). Idempotent. */
  drop(): Promise<void>;
}

async function admin<T>(use: (client: pg.Client) => Promise<T>, url = PG_ADMIN_URL): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** A fresh database on the server of `adminUrl` (an admin connection URL; PG_ADMIN_URL by default). */
export async function createTestDatabase(adminUrl = PG_ADMIN_URL): Promise<TestDatabase> {
  const name = `pets_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`), adminUrl);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: url.toString(),
    query: async <T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) =>
      admin(async (c) => (await c.query<T>(sql, values)).rows, url.toString()),
    drop: () => (dropped ??= admin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)), adminUrl)),
  };
}
