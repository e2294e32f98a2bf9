import { mkdir } from "node:fs/promises";
import path from "node:path";
import { context, type Span } from "@opentelemetry/api";
import type sqlite3 from "sqlite3";
import { latencySeries, type LatencySeries } from "../../../lib/openmetrics.ts";
import type { PetServiceMetrics, SqliteQuery } from "../../metrics.ts";
import { petOfRow, type CreateOnceResult, type IdempotencyKey, type ListQuery, type NewPet, type Pet, type PetRow, type PetStore } from "../pet-store.ts";
import { all, closeDatabase, exec, openDatabase, prepare } from "./calls.ts";
import type { SchemaReport } from "../migrations.ts";
import { toStorageError } from "./faults.ts";
import { GroupCommit, type CommitStats } from "./group-commit.ts";
import { createOnceInTransaction, IDEMPOTENCY_STATEMENTS, type IdempotencyStatements } from "./idempotency.ts";
import { migrateSqlite } from "./migrations.ts";
import { endQuerySpan, querySpan, type QueryShape } from "../query-span.ts";

/**
 * WAL lets reads run beside the single writer. synchronous=FULL fsyncs the WAL on every commit,
 * so an acknowledged create survives not only a killed process (NORMAL would do for that) but
 * also an OS crash or power loss; the cost is one fsync per commit, and group commit (below)
 * shares that fsync between the creates that arrive together.
 */
const PRAGMAS = `
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
`;

/**
 * sqlite3 hands INTEGER columns to JS as numbers (rounded above 2^53) and binds BigInt as NULL,
 * so int64 values cross the boundary as decimal text in both directions. Filters and ordering
 * name `pets.id`: a bare `id` in ORDER BY would mean the text alias (and sort "10" before "9").
 * Keyset paging: `pets.id > ?` walks the primary key (every status) or pets_by_status (one
 * status, whose entries are ordered by id within it), so a page is a range scan, never a sort.
 */
const COLUMNS = "CAST(id AS TEXT) AS id, name, CAST(category_id AS TEXT) AS categoryId, status";
export const SQLITE_STATEMENTS = {
  insert: `INSERT INTO pets (name, category_id, status) VALUES (?, CAST(? AS INTEGER), ?) RETURNING ${COLUMNS}`,
  get: `SELECT ${COLUMNS} FROM pets WHERE pets.id = CAST(? AS INTEGER)`,
  list: `SELECT ${COLUMNS} FROM pets WHERE pets.id > CAST(? AS INTEGER) ORDER BY pets.id LIMIT ?`,
  listByStatus: `SELECT ${COLUMNS} FROM pets WHERE status = ? AND pets.id > CAST(? AS INTEGER) ORDER BY pets.id LIMIT ?`,
} as const;

type QueryKey = keyof typeof SQLITE_STATEMENTS;
/** Each query's prepared statements: one for the insert (the writer), READ_STATEMENT_COPIES for each read. */
type Statements = Record<QueryKey, sqlite3.Statement[]>;

/**
 * node-sqlite3 runs one call at a time per statement: with a single statement, concurrent reads
 * queue behind each other and each finishes in an event-loop turn of its own. With copies on the
 * reader connection their answers finish together and share the wake-ups and HTTP/2 writes of
 * one turn. Pet service alone, CPU-µs per ListPets(20): 1 copy 492, 4 copies 290 (twice the
 * calls per second); 8 vs 4: 297 vs 342; 16 vs 8: 355 vs 365, and 428 vs 488 on the full path
 * (README, Performance notes). Each read is still its own implicit transaction on the reader,
 * seeing what was committed.
 */
const READ_STATEMENT_COPIES = 16;

/** The `query` label of each statement in pet_service_sqlite_query_duration_seconds. */
const QUERY_NAMES: Readonly<Record<QueryKey, SqliteQuery>> = {
  insert: "insert_pet",
  get: "get_pet",
  list: "list_pets",
  listByStatus: "list_pets_by_status",
};

/** Each statement's span (query-span.ts). */
const QUERY_SHAPES: Readonly<Record<QueryKey, QueryShape>> = {
  insert: { query: QUERY_NAMES.insert, operation: "INSERT", table: "pets" },
  get: { query: QUERY_NAMES.get, operation: "SELECT", table: "pets" },
  list: { query: QUERY_NAMES.list, operation: "SELECT", table: "pets" },
  listByStatus: { query: QUERY_NAMES.listByStatus, operation: "SELECT", table: "pets" },
};

/** A create's wait for the group commit that makes it durable (shared with the creates that arrived with it). */
const COMMIT_SHAPE: QueryShape = { query: "commit", operation: "COMMIT" };

export interface SqlitePetStoreOptions {
  /** Optional: every statement is timed by query name, and creates per commit counted (pet-service/metrics.ts). */
  metrics?: Pick<PetServiceMetrics, "sqliteQueryDuration" | "sqliteWritesPerCommit">;
}

interface SqliteParts {
  dir: string;
  writer: sqlite3.Database;
  reader: sqlite3.Database;
  statements: Statements;
  idempotency: IdempotencyStatements;
  timers: Partial<Record<QueryKey, LatencySeries>>;
  commits: GroupCommit;
  pageTokenSecret: Buffer;
  schema: SchemaReport;
}

/**
 * Pets in one SQLite file, on two connections: one writer, and one reader for list/get. Creates
 * are group-committed on the writer (group-commit.ts): each is acknowledged only after the COMMIT
 * that made it durable.
 *
 * The reader connection sees committed (hence durable) data only: under WAL a reader never sees
 * another connection's open transaction, so list/get never show a pet whose commit may still fail.
 *
 * Storage faults (disk full, read-only or failing file system, lock timeout) reject with
 * StorageUnavailableError (faults.ts); a failed batch stored nothing, and the next batch
 * tries again, so writes resume by themselves once the fault clears. Reads go on while they can
 * (a full disk or a read-only file system does not stop them).
 */
export class SqlitePetStore implements PetStore {
  private closing: Promise<void> | undefined;
  /** Picks the next copy of a read statement, in turn. */
  private turn = 0;

  /** The database file's directory: where a read-only file system is recognised. */
  private readonly dir: string;
  private readonly writer: sqlite3.Database;
  private readonly reader: sqlite3.Database;
  private readonly statements: Statements;
  private readonly idempotency: IdempotencyStatements;
  /** Label children bound once at open, so timing a query costs no label lookup. */
  private readonly timers: Partial<Record<QueryKey, LatencySeries>>;
  /** Creates queue here and are committed together (group-commit.ts). */
  private readonly commits: GroupCommit;
  readonly pageTokenSecret: Buffer;
  readonly schema: SchemaReport;

  private constructor(parts: SqliteParts) {
    this.dir = parts.dir;
    this.writer = parts.writer;
    this.reader = parts.reader;
    this.statements = parts.statements;
    this.idempotency = parts.idempotency;
    this.timers = parts.timers;
    this.commits = parts.commits;
    this.pageTokenSecret = parts.pageTokenSecret;
    this.schema = parts.schema;
  }

  /**
   * Opens the database at `file`, creating the file and its directory when missing, and brings
   * its schema to the latest version (migrations.ts).
   */
  static async open(file: string, options: SqlitePetStoreOptions = {}): Promise<SqlitePetStore> {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    const writer = await openDatabase(file);
    let reader: sqlite3.Database | undefined;
    try {
      await exec(writer, PRAGMAS);
      const schema = await migrateSqlite(writer);
      reader = await openDatabase(file);
      await exec(reader, "PRAGMA query_only = 1;");
      const entries = await Promise.all(
        Object.entries(SQLITE_STATEMENTS).map(async ([key, sql]) => {
          const copies = key === "insert" ? [writer] : Array<sqlite3.Database>(READ_STATEMENT_COPIES).fill(reader!);
          return [key, await Promise.all(copies.map((db) => prepare(db, sql)))] as const;
        }),
      );
      const idempotency = await Promise.all(
        Object.entries(IDEMPOTENCY_STATEMENTS).map(async ([key, sql]) => [key, await prepare(writer, sql)] as const),
      );
      const [secret] = await all<{ value: Buffer }>(reader, "SELECT value FROM secrets WHERE name = 'page_token'");
      const histogram = options.metrics?.sqliteQueryDuration;
      const timers = histogram
        ? Object.fromEntries(Object.entries(QUERY_NAMES).map(([key, query]) => [key, latencySeries(histogram, { query })]))
        : {};
      return new SqlitePetStore({
        dir: path.dirname(path.resolve(file)),
        writer,
        reader,
        statements: Object.fromEntries(entries) as Statements,
        idempotency: Object.fromEntries(idempotency) as IdempotencyStatements,
        timers,
        commits: new GroupCommit(writer, path.dirname(path.resolve(file)), options.metrics?.sqliteWritesPerCommit),
        pageTokenSecret: secret!.value,
        schema,
      });
    } catch (err) {
      writer.close(() => {});
      reader?.close(() => {});
      throw err;
    }
  }

  create(pet: NewPet): Promise<Pet> {
    return this.enqueue(() => this.insert(pet)).catch(this.storageError);
  }

  createOnce(pet: NewPet, key: IdempotencyKey): Promise<CreateOnceResult> {
    return this.enqueue(() => createOnceInTransaction(this.idempotency, key, () => this.insert(pet))).catch(this.storageError);
  }

  async list({ limit, status, afterId = 0n }: ListQuery): Promise<Pet[]> {
    const after = String(afterId);
    const rows = await (status ? this.query("listByStatus", [status, after, limit]) : this.query("list", [after, limit])).catch(
      this.storageError,
    );
    return rows.map(petOfRow);
  }

  async get(id: bigint): Promise<Pet | undefined> {
    const [row] = await this.query("get", [String(id)]).catch(this.storageError);
    return row && petOfRow(row);
  }

  /** A local file: reachable whenever the process runs (its write faults surface on the writes). */
  async ping(): Promise<void> {}

  /** Rethrows a storage fault as StorageUnavailableError, anything else unchanged. */
  private readonly storageError = (err: unknown): never => {
    throw toStorageError(err, this.dir);
  };

  /** Transactions committed and creates acknowledged so far. */
  commitStats(): CommitStats {
    return this.commits.stats();
  }

  close(): Promise<void> {
    // Queued creates are committed first; finalizing queues behind each statement's pending
    // work, so in-flight reads complete; then both connections close.
    this.closing ??= Promise.resolve()
      .then(() => this.commits.drain())
      .then(() =>
        Promise.all(
          [...Object.values(this.statements).flat(), ...Object.values(this.idempotency)].map(
            (s) => new Promise<void>((resolve) => s.finalize(() => resolve())),
          ),
        ),
      )
      .then(() => Promise.all([closeDatabase(this.writer), closeDatabase(this.reader)]))
      .then(() => undefined);
    return this.closing;
  }

  /**
   * Queues a create for the next group commit; settles after that commit (or its failure). The
   * batch runs in whichever request's context started it: each create's statements run in its
   * own request's (their spans are its children), then a COMMIT span covers its wait for the
   * commit.
   */
  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new Error("pet store is closed"));
    let commit: Span | undefined;
    const done = this.commits.enqueue(
      context.bind(context.active(), async () => {
        const value = await work();
        commit = querySpan("sqlite", COMMIT_SHAPE);
        return value;
      }),
    );
    return done.then(
      (value) => {
        endQuerySpan(commit, false);
        return value;
      },
      (err: unknown) => {
        endQuerySpan(commit, true);
        throw err;
      },
    );
  }

  private async insert(pet: NewPet): Promise<Pet> {
    // `all`, not `get`: it steps the statement to completion (`get` would leave it mid-way).
    // The batch's COMMIT makes it durable.
    const [row] = await this.query("insert", [pet.name, String(pet.categoryId), pet.status]);
    return petOfRow(row!);
  }

  /** Runs a prepared statement to completion, in a span of its own; timed (failures included) when metrics are on. */
  private query(key: QueryKey, params: unknown[]): Promise<PetRow[]> {
    if (this.closing && key !== "insert") return Promise.reject(new Error("pet store is closed"));
    const timer = this.timers[key];
    const span = querySpan("sqlite", QUERY_SHAPES[key]);
    const started = timer && performance.now();
    return new Promise((resolve, reject) => {
      const copies = this.statements[key];
      copies[this.turn++ % copies.length]!.all<PetRow>(params, (err, rows) => {
        if (timer) timer.observe((performance.now() - started!) / 1000, span);
        endQuerySpan(span, err !== null);
        if (err) reject(err);
        else resolve(rows);
      });
    });
  }
}
