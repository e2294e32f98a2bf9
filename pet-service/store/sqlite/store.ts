import { mkdirSync } from "node:fs";
import path from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { latencySeries, type LatencySeries } from "../../../lib/openmetrics.ts";
import { openDurableWriter } from "../../../lib/sqlite.ts";
import { WorkerCalls } from "../../../lib/worker-calls.ts";
import type { PetServiceMetrics, SqliteQuery } from "../../metrics.ts";
import type { CreateOnceResult, IdempotencyKey, ListQuery, NewPet, Pet, PetStatus, PetStore } from "../pet-store.ts";
import type { SchemaReport } from "../../../lib/migrations.ts";
import { endQuerySpan, PET_QUERIES, querySpan } from "../query-span.ts";
import type { BatchResult, WriteRequest } from "./commit-batch.ts";
import { toStorageError } from "../../../lib/sqlite-faults.ts";
import { GroupCommit, type CommitStats } from "./group-commit.ts";
import { migrateSqlite } from "./migrations.ts";
import { ReadCache } from "./read-cache.ts";

/**
 * The reads, on the main thread's connection, which reads INTEGER columns as bigint (ids and
 * category ids exact over int64, bound as bigint too). Their rows come as arrays of the four
 * columns in this order (petOfColumns). Filters and ordering name `pets.id`.
 * Keyset paging: `pets.id > ?` walks the primary key (every status) or pets_by_status (one
 * status, whose entries are ordered by id within it), so a page is a range scan, never a sort.
 */
const COLUMNS = "id, name, category_id AS categoryId, status";
export const SQLITE_STATEMENTS = {
  get: `SELECT ${COLUMNS} FROM pets WHERE pets.id = ?`,
  list: `SELECT ${COLUMNS} FROM pets WHERE pets.id > ? ORDER BY pets.id LIMIT ?`,
  listByStatus: `SELECT ${COLUMNS} FROM pets WHERE status = ? AND pets.id > ? ORDER BY pets.id LIMIT ?`,
} as const;

type ReadKey = keyof typeof SQLITE_STATEMENTS;
const READS = Object.keys(SQLITE_STATEMENTS) as ReadKey[];

/**
 * A row of COLUMNS as a Pet. Rows as arrays, turned into objects of one shape here: node:sqlite's
 * row objects (null prototype, a property per column) cost twice as much to make and to read,
 * ListPets(20) 21 vs 11 µs in a loop (docs/performance.md, "The pet service's read path").
 */
const petOfColumns = ([id, name, categoryId, status]: unknown[]): Pet => ({
  id: id as bigint,
  name: name as string,
  categoryId: categoryId as bigint,
  status: status as PetStatus,
});

function prepareRead(reader: DatabaseSync, key: ReadKey): StatementSync {
  const statement = reader.prepare(SQLITE_STATEMENTS[key]);
  statement.setReturnArrays(true);
  return statement;
}

export interface SqlitePetStoreOptions {
  /** Optional: every statement is timed by query name, and creates per commit counted (pet-service/metrics.ts). */
  metrics?: Pick<PetServiceMetrics, "sqliteQueryDuration" | "sqliteWritesPerCommit">;
}

interface SqliteParts {
  dir: string;
  reader: DatabaseSync;
  statements: Record<ReadKey, StatementSync>;
  cache: ReadCache<Pet[]>;
  timers: Partial<Record<ReadKey, LatencySeries>>;
  writer: WorkerCalls<WriteRequest[], BatchResult>;
  commits: GroupCommit;
  pageTokenSecret: Buffer;
  schema: SchemaReport;
}

/**
 * Pets in one SQLite file (node:sqlite, lib/sqlite.ts), on two connections: the writer, in a
 * worker thread of its own (writer-worker.ts), and the reader, on the main thread, for list/get.
 * Creates are group-committed by the writer (group-commit.ts, commit-batch.ts): each is
 * acknowledged only after the COMMIT that made it durable, and no statement, lock wait or fsync
 * of a write ever blocks the event loop. A read is one short statement on the main thread (WAL:
 * it never waits for the writer): a ListPets(20) costs tens of µs there, where a hop to a thread
 * and back cost more than the read itself (docs/performance.md, "The pet service's read path").
 *
 * The reader sees committed (hence durable) data only: under WAL a reader never sees another
 * connection's open transaction, so list/get never show a pet whose commit may still fail.
 *
 * Storage faults (disk full, read-only or failing file system, lock timeout) reject with
 * StorageUnavailableError (lib/sqlite-faults.ts); a failed batch stored nothing, and the next batch tries
 * again, so writes resume by themselves once the fault clears. Reads go on while they can (a
 * full disk or a read-only file system does not stop them).
 */
export class SqlitePetStore implements PetStore {
  private closing: Promise<void> | undefined;

  /** The database file's directory: where a read-only file system is recognised. */
  private readonly dir: string;
  private readonly reader: DatabaseSync;
  private readonly statements: Record<ReadKey, StatementSync>;
  /** The reads' results while the database is unchanged (read-cache.ts). */
  private readonly cache: ReadCache<Pet[]>;
  /** Label children bound once at open, so timing a query costs no label lookup. */
  private readonly timers: Partial<Record<ReadKey, LatencySeries>>;
  private readonly writer: WorkerCalls<WriteRequest[], BatchResult>;
  /** Creates queue here and are committed together (group-commit.ts). */
  private readonly commits: GroupCommit;
  readonly pageTokenSecret: Buffer;
  readonly schema: SchemaReport;

  private constructor(parts: SqliteParts) {
    this.dir = parts.dir;
    this.reader = parts.reader;
    this.statements = parts.statements;
    this.cache = parts.cache;
    this.timers = parts.timers;
    this.writer = parts.writer;
    this.commits = parts.commits;
    this.pageTokenSecret = parts.pageTokenSecret;
    this.schema = parts.schema;
  }

  /**
   * Opens the database at `file`, creating the file and its directory when missing, and brings
   * its schema to the latest version (migrations.ts) before it serves: that one transaction runs
   * on the calling thread, then the connection becomes the reader.
   */
  static async open(file: string, options: SqlitePetStoreOptions = {}): Promise<SqlitePetStore> {
    const dir = path.dirname(path.resolve(file));
    mkdirSync(dir, { recursive: true });
    const reader = openDurableWriter(file, { readBigInts: true });
    const writer = new WorkerCalls<WriteRequest[], BatchResult>(new URL("./writer-worker.ts", import.meta.url), { file });
    try {
      const schema = migrateSqlite(reader);
      reader.exec("PRAGMA query_only = 1");
      const secret = reader.prepare("SELECT value FROM secrets WHERE name = 'page_token'").get()!.value as Uint8Array;
      // The writer opens its connection now: a file it cannot write fails the open, not the first create.
      await writer.call([]);
      const histogram = options.metrics?.sqliteQueryDuration;
      const timer = (key: ReadKey | "insert") => (histogram ? latencySeries(histogram, { query: PET_QUERIES[key] satisfies SqliteQuery }) : undefined);
      const timers = histogram ? Object.fromEntries(READS.map((key) => [key, timer(key)])) : {};
      const insertTimer = timer("insert");
      const batchSizes = options.metrics?.sqliteWritesPerCommit;
      const store: SqlitePetStore = new SqlitePetStore({
        dir,
        reader,
        statements: Object.fromEntries(READS.map((key) => [key, prepareRead(reader, key)])) as Record<ReadKey, StatementSync>,
        cache: new ReadCache(reader),
        timers,
        writer,
        commits: new GroupCommit(writer, {
          classify: (error) => toStorageError(error, dir),
          ...(batchSizes && { batchSizes }),
          ...(insertTimer && { insertTimer }),
        }),
        pageTokenSecret: Buffer.from(secret),
        schema,
      });
      return store;
    } catch (err) {
      reader.close();
      await writer.close();
      throw err;
    }
  }

  create(pet: NewPet): Promise<Pet> {
    return this.enqueue({ pet });
  }

  createOnce(pet: NewPet, key: IdempotencyKey): Promise<CreateOnceResult> {
    return this.enqueue({ pet, key });
  }

  list({ limit, status, afterId = 0n }: ListQuery): Promise<Pet[]> {
    return status ? this.read("listByStatus", [status, afterId, limit]) : this.read("list", [afterId, limit]);
  }

  async get(id: bigint): Promise<Pet | undefined> {
    const [pet] = await this.read("get", [id]);
    return pet;
  }

  /** A local file: reachable whenever the process runs (its write faults surface on the writes). */
  async ping(): Promise<void> {}

  /** Transactions committed and creates acknowledged so far. */
  commitStats(): CommitStats {
    return this.commits.stats();
  }

  close(): Promise<void> {
    // Queued creates are committed first; reads run to completion as they are made.
    this.closing ??= this.commits
      .drain()
      .then(() => this.writer.close())
      .then(() => this.reader.close());
    return this.closing;
  }

  private enqueue<T>(request: WriteRequest): Promise<T> {
    if (this.closing) return Promise.reject(new Error("pet store is closed"));
    return this.commits.enqueue<T>(request);
  }

  /**
   * Runs a read statement to completion (or takes its result while the database is unchanged:
   * read-cache.ts), in a span of its own; timed (failures included) when metrics are on; storage
   * faults as StorageUnavailableError. Callers share the pets: they must not change them.
   */
  private read(key: ReadKey, params: (string | number | bigint)[]): Promise<Pet[]> {
    if (this.closing) return Promise.reject(new Error("pet store is closed"));
    const timer = this.timers[key];
    const span = querySpan("sqlite", PET_QUERIES[key]);
    const started = timer && performance.now();
    let failed = true;
    try {
      const pets = this.cache.get(`${key} ${params.join(" ")}`, () => (this.statements[key].all(...params) as unknown as unknown[][]).map(petOfColumns));
      failed = false;
      return Promise.resolve(pets);
    } catch (err) {
      return Promise.reject(toStorageError(err, this.dir));
    } finally {
      if (timer) timer.observe((performance.now() - started!) / 1000, span);
      endQuerySpan(span, failed);
    }
  }
}
