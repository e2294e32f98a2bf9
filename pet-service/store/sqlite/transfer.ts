import type { DatabaseSync } from "node:sqlite";
import { openSqlite } from "../../../lib/sqlite.ts";
import type { Pet } from "../pet-store.ts";
import { SQLITE_STATEMENTS } from "./store.ts";
import type { KeyRecord, TransferSource, TransferTarget } from "../transfer.ts";

/**
 * Both ends of a copy on a SQLite file (transfer.ts), each on a connection of its own that reads
 * INTEGER columns as bigint; the schema is the caller's to bring up to date first (opening the
 * store does). A copy is a tool's whole work (`pets-db copy`): its statements run on the main thread.
 */

/** AUTOINCREMENT's counter (sqlite_sequence) or the highest id, whichever is higher. */
const LAST_ISSUED_ID = `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'pets'), 0),
                                coalesce((SELECT max(id) FROM pets), 0)) AS id`;

const lastIssuedId = async (db: DatabaseSync): Promise<bigint> => db.prepare(LAST_ISSUED_ID).get()!.id as bigint;

/** Reads `file` in one read transaction: every query sees the same snapshot (WAL). */
export async function sqliteTransferSource(file: string): Promise<TransferSource> {
  const db = openSqlite(file, { readOnly: true, readBigInts: true });
  db.exec("BEGIN");
  return {
    async counts(liveAfter) {
      const row = db
        .prepare("SELECT (SELECT count(*) FROM pets) AS pets, (SELECT count(*) FROM idempotency_keys WHERE created_at > ?) AS keys")
        .get(liveAfter)!;
      return { pets: Number(row.pets), keys: Number(row.keys) };
    },
    async pets(afterId, limit) {
      return db.prepare(SQLITE_STATEMENTS.list).all(afterId, limit) as unknown as Pet[];
    },
    async *keys(liveAfter, batchSize) {
      const page = db.prepare(
        `SELECT rowid, request_id AS requestId, request_hash AS requestHash, pet_id AS petId, created_at AS createdAt
           FROM idempotency_keys WHERE created_at > ? AND rowid > ? ORDER BY rowid LIMIT ?`,
      );
      for (let after = 0n; ; ) {
        const rows = page.all(liveAfter, after, batchSize) as unknown as (Omit<KeyRecord, "createdAt"> & { rowid: bigint; createdAt: bigint })[];
        if (rows.length === 0) return;
        after = rows[rows.length - 1]!.rowid;
        yield rows.map(({ rowid: _, createdAt, ...key }) => ({ ...key, createdAt: Number(createdAt) }));
      }
    },
    async pageTokenSecret() {
      return Buffer.from(db.prepare("SELECT value FROM secrets WHERE name = 'page_token'").get()!.value as Uint8Array);
    },
    lastIssuedId: () => lastIssuedId(db),
    async close() {
      if (db.isTransaction) db.exec("ROLLBACK");
      db.close();
    },
  };
}

/** Rows per INSERT: 4 parameters each, well under SQLite's 32,766. */
const ROWS_PER_INSERT = 500;

/** Writes `file` in one write transaction (BEGIN IMMEDIATE: no other writer meanwhile). */
export async function sqliteTransferTarget(file: string): Promise<TransferTarget> {
  const db = openSqlite(file, { readBigInts: true });
  db.exec("BEGIN IMMEDIATE");
  let ended = false;
  const end = async (sql: string) => {
    if (ended) return;
    ended = true;
    try {
      if (db.isTransaction) db.exec(sql);
    } finally {
      db.close();
    }
  };
  const insertRows = (table: string, columns: string, placeholders: string, rows: unknown[][]) => {
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      db.prepare(`INSERT INTO ${table} (${columns}) VALUES ${chunk.map(() => placeholders).join(", ")}`).run(...(chunk.flat() as (string | number | bigint)[]));
    }
  };
  return {
    async isEmpty() {
      return db.prepare("SELECT EXISTS (SELECT 1 FROM pets) OR EXISTS (SELECT 1 FROM idempotency_keys) AS used").get()!.used === 0n;
    },
    clear: async () => db.exec("DELETE FROM idempotency_keys; DELETE FROM pets;"),
    insertPets: async (pets: Pet[]) =>
      insertRows("pets", "id, name, category_id, status", "(?, ?, ?, ?)", pets.map((p) => [p.id, p.name, p.categoryId, p.status])),
    insertKeys: async (keys: KeyRecord[]) =>
      insertRows(
        "idempotency_keys",
        "request_id, request_hash, pet_id, created_at",
        "(?, ?, ?, ?)",
        keys.map((k) => [k.requestId, k.requestHash, k.petId, k.createdAt]),
      ),
    setPageTokenSecret: async (secret) => void db.prepare("INSERT OR REPLACE INTO secrets (name, value) VALUES ('page_token', ?)").run(secret),
    lastIssuedId: () => lastIssuedId(db),
    async moveIdsPast(id) {
      // AUTOINCREMENT hands out max(seq, max(id)) + 1; sqlite_sequence has no row before the first insert.
      db.prepare("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'pets'").run(id);
      db.prepare("INSERT INTO sqlite_sequence (name, seq) SELECT 'pets', ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'pets')").run(id);
    },
    commit: () => end("COMMIT"),
    rollback: () => end("ROLLBACK").catch(() => {}),
  };
}
