import sqlite3 from "sqlite3";
import { petOfRow, type Pet, type PetRow } from "../pet-store.ts";
import { all, closeDatabase, exec, openDatabase, run } from "./calls.ts";
import { SQLITE_STATEMENTS } from "./store.ts";
import type { KeyRecord, TransferSource, TransferTarget } from "../transfer.ts";

/**
 * Both ends of a copy on a SQLite file (transfer.ts), each on a connection of its own; the schema
 * is the caller's to bring up to date first (opening the store does). int64 crosses as text.
 */

/** AUTOINCREMENT's counter (sqlite_sequence) or the highest id, whichever is higher. */
const LAST_ISSUED_ID = `SELECT CAST(max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'pets'), 0),
                                     coalesce((SELECT max(id) FROM pets), 0)) AS TEXT) AS id`;

async function lastIssuedId(db: sqlite3.Database): Promise<bigint> {
  const [row] = await all<{ id: string }>(db, LAST_ISSUED_ID);
  return BigInt(row!.id);
}

/** Reads `file` in one read transaction: every query sees the same snapshot (WAL). */
export async function sqliteTransferSource(file: string): Promise<TransferSource> {
  const db = await openDatabase(file, sqlite3.OPEN_READONLY);
  await run(db, "BEGIN");
  return {
    async counts(liveAfter) {
      const [row] = await all<{ pets: number; keys: number }>(
        db,
        "SELECT (SELECT count(*) FROM pets) AS pets, (SELECT count(*) FROM idempotency_keys WHERE created_at > ?) AS keys",
        [liveAfter],
      );
      return row!;
    },
    async pets(afterId, limit) {
      const rows = await all<PetRow>(db, SQLITE_STATEMENTS.list, [String(afterId), limit]);
      return rows.map(petOfRow);
    },
    async *keys(liveAfter, batchSize) {
      for (let after = 0; ; ) {
        const rows = await all<{ rowid: number; requestId: string; requestHash: string; petId: string; createdAt: number }>(
          db,
          `SELECT rowid, request_id AS requestId, request_hash AS requestHash, CAST(pet_id AS TEXT) AS petId, created_at AS createdAt
             FROM idempotency_keys WHERE created_at > ? AND rowid > ? ORDER BY rowid LIMIT ?`,
          [liveAfter, after, batchSize],
        );
        if (rows.length === 0) return;
        after = rows[rows.length - 1]!.rowid;
        yield rows.map(({ rowid: _, petId, ...key }) => ({ ...key, petId: BigInt(petId) }));
      }
    },
    async pageTokenSecret() {
      const [row] = await all<{ value: Buffer }>(db, "SELECT value FROM secrets WHERE name = 'page_token'");
      return row!.value;
    },
    lastIssuedId: () => lastIssuedId(db),
    async close() {
      await run(db, "ROLLBACK").catch(() => {});
      await closeDatabase(db);
    },
  };
}

/** Rows per INSERT: 4 parameters each, well under SQLite's 32,766. */
const ROWS_PER_INSERT = 500;

/** Writes `file` in one write transaction (BEGIN IMMEDIATE: no other writer meanwhile). */
export async function sqliteTransferTarget(file: string): Promise<TransferTarget> {
  const db = await openDatabase(file);
  await run(db, "BEGIN IMMEDIATE");
  let ended: Promise<void> | undefined;
  const end = (sql: string) => (ended ??= run(db, sql).finally(() => closeDatabase(db)));
  const insertRows = async (table: string, columns: string, placeholders: string, rows: unknown[][]) => {
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      await run(db, `INSERT INTO ${table} (${columns}) VALUES ${chunk.map(() => placeholders).join(", ")}`, chunk.flat());
    }
  };
  return {
    async isEmpty() {
      const [row] = await all<{ used: number }>(db, "SELECT EXISTS (SELECT 1 FROM pets) OR EXISTS (SELECT 1 FROM idempotency_keys) AS used");
      return row!.used === 0;
    },
    clear: () => exec(db, "DELETE FROM idempotency_keys; DELETE FROM pets;"),
    insertPets: (pets: Pet[]) =>
      insertRows(
        "pets",
        "id, name, category_id, status",
        "(CAST(? AS INTEGER), ?, CAST(? AS INTEGER), ?)",
        pets.map((p) => [String(p.id), p.name, String(p.categoryId), p.status]),
      ),
    insertKeys: (keys: KeyRecord[]) =>
      insertRows(
        "idempotency_keys",
        "request_id, request_hash, pet_id, created_at",
        "(?, ?, CAST(? AS INTEGER), ?)",
        keys.map((k) => [k.requestId, k.requestHash, String(k.petId), k.createdAt]),
      ),
    setPageTokenSecret: (secret) => run(db, "INSERT OR REPLACE INTO secrets (name, value) VALUES ('page_token', ?)", [secret]),
    lastIssuedId: () => lastIssuedId(db),
    async moveIdsPast(id) {
      // AUTOINCREMENT hands out max(seq, max(id)) + 1; sqlite_sequence has no row before the first insert.
      await run(db, "UPDATE sqlite_sequence SET seq = max(seq, CAST(? AS INTEGER)) WHERE name = 'pets'", [String(id)]);
      await run(
        db,
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'pets', CAST(? AS INTEGER) WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'pets')",
        [String(id)],
      );
    },
    commit: () => end("COMMIT"),
    rollback: () => end("ROLLBACK").catch(() => {}),
  };
}
