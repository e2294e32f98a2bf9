import { mkdir } from "node:fs/promises";
import path from "node:path";
import sqlite3 from "sqlite3";
import type { PetServiceMetrics, SqliteQuery } from "../metrics.js";
import type { CreateOnceResult, IdempotencyKey, ListQuery, NewPet, Pet, PetStatus, PetStore } from "./pet-store.js";
import { createOnceInTransaction, IDEMPOTENCY_SCHEMA } from "./sqlite-idempotency.js";

/**
 * WAL lets reads run beside the single writer. synchronous=FULL fsyncs the WAL on every commit,
 * so an acknowledged create survives not only a killed process (NORMAL would do for that) but
 * also an OS crash or power loss; the cost is one fsync per create.
 * busy_timeout makes a write wait for another connection's lock (a backup, an operator's shell)
 * instead of failing at once.
 */
const BUSY_TIMEOUT_MS = 5_000;
const PRAGMAS = `
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
`;

/** AUTOINCREMENT: ids are never reused, even after the highest row is deleted. */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS pets (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL,
    category_id INTEGER NOT NULL CHECK (category_id > 0),
    status      TEXT    NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
  ) STRICT;
  CREATE INDEX IF NOT EXISTS pets_by_status ON pets (status, id);
`;

/**
 * sqlite3 hands INTEGER columns to JS as numbers (rounded above 2^53) and binds BigInt as NULL,
 * so int64 values cross the boundary as decimal text in both directions. Filters and ordering
 * name `pets.id`: a bare `id` in ORDER BY would mean the text alias (and sort "10" before "9").
 */
const COLUMNS = "CAST(id AS TEXT) AS id, name, CAST(category_id AS TEXT) AS categoryId, status";
const SQL = {
  insert: `INSERT INTO pets (name, category_id, status) VALUES (?, CAST(? AS INTEGER), ?) RETURNING ${COLUMNS}`,
  get: `SELECT ${COLUMNS} FROM pets WHERE pets.id = CAST(? AS INTEGER)`,
  list: `SELECT ${COLUMNS} FROM pets ORDER BY pets.id LIMIT ?`,
  listByStatus: `SELECT ${COLUMNS} FROM pets WHERE status = ? ORDER BY pets.id LIMIT ?`,
} as const;

type QueryKey = keyof typeof SQL;
type Statements = Record<QueryKey, sqlite3.Statement>;

/** The `query` label of each statement in pet_service_sqlite_query_duration_seconds. */
const QUERY_NAMES: Readonly<Record<QueryKey, SqliteQuery>> = {
  insert: "insert_pet",
  get: "get_pet",
  list: "list_pets",
  listByStatus: "list_pets_by_status",
};

export interface SqlitePetStoreOptions {
  /** Optional: every statement is timed by query name (pet-service/metrics.ts). */
  metrics?: Pick<PetServiceMetrics, "sqliteQueryDuration">;
}

type Observer = { observe(seconds: number): void };

interface Row {
  id: string;
  name: string;
  categoryId: string;
  status: PetStatus;
}

export class SqlitePetStore implements PetStore {
  private closing: Promise<void> | undefined;
  /**
   * The tail of the queue of writes. The connection has one transaction, so writes run one at a
   * time: an autocommit insert issued while createOnce's transaction is open would join it (and
   * be acknowledged before it is durable). SQLite runs one writer at a time anyway.
   */
  private writes: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly db: sqlite3.Database,
    private readonly statements: Statements,
    /** Label children bound once at open, so timing a query costs no label lookup. */
    private readonly timers: Partial<Record<QueryKey, Observer>>,
  ) {}

  /** Opens (creating the file, its directory and the schema when missing) the database at `file`. */
  static async open(file: string, options: SqlitePetStoreOptions = {}): Promise<SqlitePetStore> {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened: sqlite3.Database = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(opened)));
    });
    try {
      db.configure("busyTimeout", BUSY_TIMEOUT_MS);
      await exec(db, PRAGMAS + SCHEMA + IDEMPOTENCY_SCHEMA);
      const entries = await Promise.all(
        Object.entries(SQL).map(async ([key, sql]) => [key, await prepare(db, sql)] as const),
      );
      const histogram = options.metrics?.sqliteQueryDuration;
      const timers = histogram
        ? Object.fromEntries(Object.entries(QUERY_NAMES).map(([key, query]) => [key, histogram.labels(query)]))
        : {};
      return new SqlitePetStore(db, Object.fromEntries(entries) as Statements, timers);
    } catch (err) {
      db.close(() => {});
      throw err;
    }
  }

  create(pet: NewPet): Promise<Pet> {
    return this.exclusively(() => this.insert(pet));
  }

  createOnce(pet: NewPet, key: IdempotencyKey): Promise<CreateOnceResult> {
    return this.exclusively(() => createOnceInTransaction(this.db, key, () => this.insert(pet)));
  }

  async list({ limit, status }: ListQuery): Promise<Pet[]> {
    const rows = status
      ? await this.all("listByStatus", [status, limit])
      : await this.all("list", [limit]);
    return rows.map(toPet);
  }

  async get(id: bigint): Promise<Pet | undefined> {
    const [row] = await this.all("get", [String(id)]);
    return row && toPet(row);
  }

  close(): Promise<void> {
    // Finalizing queues behind each statement's pending work, so in-flight operations complete
    // first; a transaction in progress ends (committed or rolled back) before the database closes.
    this.closing ??= this.writes
      .then(() =>
        Promise.all(Object.values(this.statements).map((s) => new Promise<void>((resolve) => s.finalize(() => resolve())))),
      )
      .then(() => new Promise<void>((resolve, reject) => this.db.close((err) => (err ? reject(err) : resolve()))));
    return this.closing;
  }

  private async insert(pet: NewPet): Promise<Pet> {
    // `all`, not `get`: it steps the statement to completion, so the insert is committed
    // (and fsynced) before we answer; `get` would leave the write transaction open. Inside
    // createOnce's transaction the COMMIT there makes it durable.
    const [row] = await this.all("insert", [pet.name, String(pet.categoryId), pet.status]);
    return toPet(row!);
  }

  /** Runs `write` after every write queued before it, alone on the connection. */
  private exclusively<T>(write: () => Promise<T>): Promise<T> {
    const run = this.writes.then(() => (this.closing ? Promise.reject(new Error("pet store is closed")) : write()));
    this.writes = run.catch(() => {});
    return run;
  }

  /** Runs a prepared statement to completion; timed (failures included) when metrics are on. */
  private all(key: QueryKey, params: unknown[]): Promise<Row[]> {
    if (this.closing) return Promise.reject(new Error("pet store is closed"));
    const timer = this.timers[key];
    const started = timer && performance.now();
    return new Promise((resolve, reject) => {
      this.statements[key].all<Row>(params, (err, rows) => {
        if (timer) timer.observe((performance.now() - started!) / 1000);
        if (err) reject(err);
        else resolve(rows);
      });
    });
  }
}

function toPet(row: Row): Pet {
  return { id: BigInt(row.id), name: row.name, categoryId: BigInt(row.categoryId), status: row.status };
}

function exec(db: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
}

function prepare(db: sqlite3.Database, sql: string): Promise<sqlite3.Statement> {
  return new Promise((resolve, reject) => {
    const statement = db.prepare(sql, (err) => (err ? reject(err) : resolve(statement)));
  });
}
