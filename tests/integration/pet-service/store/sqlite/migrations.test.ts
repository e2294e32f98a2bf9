import { readFile } from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { IDEMPOTENCY_TTL_MS, requestHash } from "../../../../../pet-service/idempotency.ts";
import { createPageTokens } from "../../../../../pet-service/page-token.ts";
import { openSqlite } from "../../../../../lib/sqlite.ts";
import { migrateSqlite, SQLITE_MIGRATIONS } from "../../../../../pet-service/store/sqlite/migrations.ts";
import { SqlitePetStore } from "../../../../../pet-service/store/sqlite/store.ts";
import { sideConnection, testDbPath } from "../../../../../testkit/pet-service.ts";

const PRE_MIGRATION_SCHEMA = await readFile(new URL("./fixtures/pre-migration-schema.sql", import.meta.url), "utf8");

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function newFile(): Promise<string> {
  const db = await testDbPath();
  cleanups.push(db.remove);
  return db.dbPath;
}

async function open(file: string): Promise<SqlitePetStore> {
  const store = await SqlitePetStore.open(file);
  cleanups.push(() => store.close());
  return store;
}

/** A database as the release before versioned migrations made and used it: pets, a live key, its secret. */
async function preMigrationDatabase(file: string): Promise<{ secret: Buffer; now: number }> {
  const db = openSqlite(file);
  const now = Date.now();
  db.exec(PRE_MIGRATION_SCHEMA);
  db.exec(
    `INSERT INTO pets (name, category_id, status) VALUES ('Rex', 9223372036854775807, 'sold'), ('Tom', 2, 'available'), ('Max', 3, 'pending');
     INSERT INTO idempotency_keys (request_id, request_hash, pet_id, created_at)
       VALUES ('key_1:order-42', '${requestHash({ name: "Tom", categoryId: 2n, status: "available" })}', 2, ${now});`,
  );
  const row = db.prepare("SELECT value FROM secrets WHERE name = 'page_token'").get() as { value: Uint8Array };
  db.close();
  return { secret: Buffer.from(row.value), now };
}

describe("SQLite versioned migrations", () => {
  it("creates a new database at the latest version and records it in schema_migrations", async () => {
    const file = await newFile();
    const store = await open(file);
    expect(store.schema).toEqual({ version: SQLITE_MIGRATIONS.length, applied: SQLITE_MIGRATIONS.map((m) => m.version), baselined: false });
    const side = await sideConnection(file);
    cleanups.push(() => side.close());
    expect(await side.all("SELECT version, name, baseline FROM schema_migrations")).toEqual([
      { version: 1, name: SQLITE_MIGRATIONS[0]!.name, baseline: 0 },
    ]);
    await store.close();
    expect((await open(file)).schema).toEqual({ version: 1, applied: [], baselined: false });
  });

  it("recognises a database made before versioned migrations and baselines it, keeping every pet, id, key and the secret", async () => {
    const file = await newFile();
    const { secret, now } = await preMigrationDatabase(file);
    const store = await open(file);
    expect(store.schema).toEqual({ version: 1, applied: [1], baselined: true });

    // Nothing changed: the same pets under the same ids, the same secret (cursors issued before keep working).
    expect(await store.list({ limit: 10 })).toEqual([
      { id: 1n, name: "Rex", categoryId: 2n ** 63n - 1n, status: "sold" },
      { id: 2n, name: "Tom", categoryId: 2n, status: "available" },
      { id: 3n, name: "Max", categoryId: 3n, status: "pending" },
    ]);
    expect(store.pageTokenSecret.equals(secret)).toBe(true);
    const cursor = createPageTokens(secret).encode({ afterId: 1n });
    expect(createPageTokens(store.pageTokenSecret).decode(cursor, undefined)).toEqual({ afterId: 1n });
    // The old key still replays its pet; new ids continue after the old ones.
    const tom = { name: "Tom", categoryId: 2n, status: "available" } as const;
    const key = { requestId: "key_1:order-42", requestHash: requestHash(tom), now: now + 1, expiredAt: now + 1 - IDEMPOTENCY_TTL_MS };
    expect(await store.createOnce(tom, key)).toEqual({ outcome: "replayed", pet: { ...tom, id: 2n } });
    expect((await store.create({ name: "New", categoryId: 1n, status: "available" })).id).toBe(4n);

    const side = await sideConnection(file);
    cleanups.push(() => side.close());
    expect(await side.all("SELECT version, baseline FROM schema_migrations")).toEqual([{ version: 1, baseline: 1 }]);
    await store.close();
    expect((await open(file)).schema).toEqual({ version: 1, applied: [], baselined: false });
  });

  it("applies only the versions a database lacks, each once", async () => {
    const file = await newFile();
    await (await open(file)).close();
    const next = { version: 2, name: "pets.nickname", sql: "ALTER TABLE pets ADD COLUMN nickname TEXT" };
    const db = openSqlite(file);
    cleanups.push(async () => db.close());
    expect(await migrateSqlite(db, [...SQLITE_MIGRATIONS, next])).toEqual({ version: 2, applied: [2], baselined: false });
    expect(await migrateSqlite(db, [...SQLITE_MIGRATIONS, next])).toEqual({ version: 2, applied: [], baselined: false });
    expect((db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[]).map((r) => r.version)).toEqual([1, 2]);
  });

  it("refuses a database newer than the code, and a pets table it did not make, changing nothing", async () => {
    const newer = await newFile();
    await (await open(newer)).close();
    const side = await sideConnection(newer);
    await side.exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (2, 'from the future', '2030-01-01')");
    await side.close();
    await expect(SqlitePetStore.open(newer)).rejects.toThrow(/schema is at version 2, newer than this release knows \(1\)/);

    const foreign = await newFile();
    const other = await sideConnection(foreign);
    await other.exec("CREATE TABLE pets (id INTEGER PRIMARY KEY, species TEXT); INSERT INTO pets VALUES (1, 'cat')");
    await expect(SqlitePetStore.open(foreign)).rejects.toThrow(/pets table with columns \(id, species\)/);
    expect(await other.all("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")).toEqual([{ name: "pets" }]);
    await other.close();
  });
});
