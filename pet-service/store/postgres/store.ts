import { randomBytes } from "node:crypto";
import pg from "pg";
import { latencySeries, type LatencySeries } from "../../../lib/openmetrics.ts";
import { endQuerySpan, PET_QUERIES, querySpan } from "../query-span.ts";
import type { Logger } from "../../../lib/logger.ts";
import type { PetServiceMetrics, PostgresQuery } from "../../metrics.ts";
import type { SchemaReport } from "../../../lib/migrations.ts";
import { migratePostgres } from "./migrations.ts";
import { asStoreError } from "../../../lib/postgres-faults.ts";
import { postgresPoolSettings } from "../../../lib/postgres-pool.ts";
import { EXPIRED_KEYS_PER_CREATE } from "../sqlite/idempotency.ts";
import { petOfRow, type CreateOnceResult, type IdempotencyKey, type ListQuery, type NewPet, type Pet, type PetRow, type PetStore } from "../pet-store.ts";

/** The pool holds PETS_DB_POOL_SIZE connections, opened at start (fillPool); lib/postgres-pool.ts has the rest. */
const POOL_SETTINGS = postgresPoolSettings("pet-service");

export const DEFAULT_POOL_SIZE = 10;

/**
 * int8 columns arrive as decimal strings (node-postgres' default for bigint), parameters are sent
 * as decimal strings: ids and category ids are exact over the whole int64 range.
 *
 * Keyset paging: `id > $n ORDER BY id LIMIT` walks the primary key (every status) or
 * pets_by_status (one status; id-ordered within it): one index range per page, never a sort or an
 * OFFSET (tests/integration/pet-service/store/postgres/pet-store.test.ts checks the plans).
 *
 * insertOnce is an idempotent create in ONE statement (autocommit, so no BEGIN/COMMIT round trips):
 *   1. delete up to EXPIRED_KEYS_PER_CREATE expired keys (other than this one; SKIP LOCKED, so
 *      concurrent creates never wait on each other's cleanup);
 *   2. take the next id from the pets sequence;
 *   3. claim the key: insert it, or take over an expired one (ON CONFLICT … WHERE expired). A live
 *      key, committed or still being inserted by a concurrent call on any replica, makes this
 *      return no row: ON CONFLICT waits for that other transaction and then sees its row;
 *   4. insert the pet under the claimed id only if the key was claimed.
 * The foreign key from the key to the pet is checked at the end of the statement, when both exist.
 * No row back means the key is live: findKey then answers the replay (or the reuse). The id taken
 * in step 2 is then left unused: a gap, never a reuse.
 */
const COLUMNS = "id, name, category_id AS \"categoryId\", status";
export const POSTGRES_STATEMENTS = {
  insert: `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
  insertOnce: `
    WITH expired AS (
           DELETE FROM idempotency_keys WHERE request_id IN (
             SELECT request_id FROM idempotency_keys WHERE created_at <= $7 AND request_id <> $4
              ORDER BY created_at LIMIT ${EXPIRED_KEYS_PER_CREATE} FOR UPDATE SKIP LOCKED)),
         next AS (SELECT nextval(pg_get_serial_sequence('pets', 'id')) AS id),
         claimed AS (
           INSERT INTO idempotency_keys AS k (request_id, request_hash, pet_id, created_at)
           SELECT $4, $5, next.id, $6 FROM next
           ON CONFLICT (request_id) DO UPDATE
             SET request_hash = excluded.request_hash, pet_id = excluded.pet_id, created_at = excluded.created_at
             WHERE k.created_at <= $7
           RETURNING pet_id)
    INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE
    SELECT pet_id, $1, $2, $3 FROM claimed
    RETURNING ${COLUMNS}`,
  findKey: `SELECT k.request_hash AS "requestHash", p.id, p.name, p.category_id AS "categoryId", p.status
              FROM idempotency_keys AS k JOIN pets AS p ON p.id = k.pet_id
             WHERE k.request_id = $1 AND k.created_at > $2`,
  get: `SELECT ${COLUMNS} FROM pets WHERE id = $1`,
  list: `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
  listByStatus: `SELECT ${COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
  ping: "SELECT 1",
} as const;

type QueryKey = keyof typeof POSTGRES_STATEMENTS;

/** The `query` label of each statement in pet_service_postgres_query_duration_seconds, and its span's. */
const QUERY_NAMES: Readonly<Record<QueryKey, PostgresQuery>> = {
  ...PET_QUERIES,
  insertOnce: "insert_pet_once",
  findKey: "find_idempotency_key",
  ping: "ping",
};

/** A connection's error as both of its log lines give it: code and message. */
const connectionError = (err: Error) => ({ code: (err as { code?: unknown }).code, message: err.message });

/**
 * Opens all `size` connections of the pool now, the way HikariCP keeps a fixed-size pool: when
 * every pooled connection is busy and the pool has room, pg-pool opens a new connection for the
 * waiting call and holds that call on it, even when another connection frees up a millisecond
 * later, so a slow connect (a busy database host, a DNS hiccup while a replica dies) made calls
 * wait the full 2 s and fail (504 at the gateway). Full, the pool queues a call for the first
 * connection released. A connection that cannot be opened now is logged and opened on demand
 * later, as one that breaks is.
 */
async function fillPool(pool: pg.Pool, size: number, logger: Logger | undefined): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: size }, () => pool.connect()));
  for (const result of opened) if (result.status === "fulfilled") result.value.release();
  const failed = opened.flatMap((result) => (result.status === "rejected" ? [result.reason as Error] : []));
  if (failed.length > 0) {
    logger?.warn({ opened: size - failed.length, size, err: connectionError(failed[0]!) }, "database pool not filled at start");
  }
}

/** A replay lookup can miss when the live key expired between the two statements: try again, a few times. */
const CREATE_ONCE_ATTEMPTS = 3;

export interface PostgresPetStoreOptions {
  /** Connections in the pool, opened at start (default DEFAULT_POOL_SIZE). */
  poolSize?: number;
  /** Optional: every statement timed by query name, the pool's connections counted (pet-service/metrics.ts). */
  metrics?: Pick<PetServiceMetrics, "postgresQueryDuration" | "observePostgresPool">;
  /** Where errors of idle pooled connections (the server restarting) are logged. */
  logger?: Logger;
}

/**
 * Pets in a PostgreSQL database shared by any number of pet-service replicas: ids from the
 * database's sequence, idempotency keys unique in the database, and a create acknowledged only
 * after its COMMIT (synchronous_commit, the server's default), so it survives the replica.
 * Storage faults reject with StorageUnavailableError (lib/postgres-faults.ts).
 */
export class PostgresPetStore implements PetStore {
  private closing: Promise<void> | undefined;

  private readonly pool: pg.Pool;
  /**
   * ping()'s own connection, outside `pool`: a ping queued behind a saturated pool (every
   * connection on a slow statement or a lock wait) would time out and take a reachable database
   * for an unreachable one (storage-health.ts). One connection more per replica.
   */
  private readonly pingPool: pg.Pool;
  private readonly timers: Partial<Record<QueryKey, LatencySeries>>;
  readonly pageTokenSecret: Buffer;
  readonly schema: SchemaReport;

  private constructor(parts: Pick<PostgresPetStore, "pageTokenSecret" | "schema"> & { pool: pg.Pool; pingPool: pg.Pool; timers: Partial<Record<QueryKey, LatencySeries>> }) {
    this.pool = parts.pool;
    this.pingPool = parts.pingPool;
    this.timers = parts.timers;
    this.pageTokenSecret = parts.pageTokenSecret;
    this.schema = parts.schema;
  }

  /** Connects to `url` (postgres://…), migrates the schema under the advisory lock, loads the page-token secret. */
  static async open(url: string, options: PostgresPetStoreOptions = {}): Promise<PostgresPetStore> {
    const size = options.poolSize ?? DEFAULT_POOL_SIZE;
    // min = max: connections the pool holds are never closed for being idle (fillPool).
    const pool = new pg.Pool({ connectionString: url, max: size, min: size, ...POOL_SETTINGS });
    const pingPool = new pg.Pool({ connectionString: url, max: 1, ...POOL_SETTINGS });
    // An idle connection that breaks (the server restarts) is dropped by the pool, which then emits
    // this; unhandled, it would end the process.
    for (const p of [pool, pingPool]) {
      p.on("error", (err) => options.logger?.warn({ err: connectionError(err) }, "idle database connection lost"));
    }
    try {
      const schema = await migratePostgres(pool);
      // The first replica to get here creates the secret; every other one reads that one.
      await pool.query("INSERT INTO secrets (name, value) VALUES ('page_token', $1) ON CONFLICT (name) DO NOTHING", [randomBytes(32)]);
      const { rows } = await pool.query<{ value: Buffer }>("SELECT value FROM secrets WHERE name = 'page_token'");
      await fillPool(pool, size, options.logger);
      const histogram = options.metrics?.postgresQueryDuration;
      const timers = histogram ? Object.fromEntries(Object.entries(QUERY_NAMES).map(([key, query]) => [key, latencySeries(histogram, { query })])) : {};
      options.metrics?.observePostgresPool(() => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }));
      return new PostgresPetStore({ pool, pingPool, timers, pageTokenSecret: rows[0]!.value, schema });
    } catch (err) {
      await Promise.all([pool.end().catch(() => {}), pingPool.end().catch(() => {})]);
      throw err;
    }
  }

  async create(pet: NewPet): Promise<Pet> {
    const [row] = await this.query("insert", [pet.name, String(pet.categoryId), pet.status]);
    return petOfRow(row!);
  }

  async createOnce(pet: NewPet, key: IdempotencyKey): Promise<CreateOnceResult> {
    for (let attempt = 1; ; attempt++) {
      const [created] = await this.query("insertOnce", [
        pet.name,
        String(pet.categoryId),
        pet.status,
        key.requestId,
        key.requestHash,
        key.now,
        key.expiredAt,
      ]);
      if (created) return { outcome: "created", pet: petOfRow(created) };
      const [found] = await this.query<PetRow & { requestHash: string }>("findKey", [key.requestId, key.expiredAt]);
      if (found) {
        const { requestHash, ...stored } = found;
        return requestHash === key.requestHash ? { outcome: "replayed", pet: petOfRow(stored) } : { outcome: "key_reused" };
      }
      if (attempt === CREATE_ONCE_ATTEMPTS) throw new Error(`idempotency key neither claimed nor found after ${attempt} attempts`);
    }
  }

  async list({ limit, status, afterId = 0n }: ListQuery): Promise<Pet[]> {
    const after = String(afterId);
    const rows = status ? await this.query("listByStatus", [status, after, limit]) : await this.query("list", [after, limit]);
    return rows.map(petOfRow);
  }

  async get(id: bigint): Promise<Pet | undefined> {
    const [row] = await this.query("get", [String(id)]);
    return row && petOfRow(row);
  }

  async ping(): Promise<void> {
    await this.query("ping", [], this.pingPool);
  }

  close(): Promise<void> {
    // pool.end waits for checked-out connections to be released, so in-flight queries finish.
    this.closing ??= Promise.all([this.pool.end(), this.pingPool.end()]).then(() => undefined);
    return this.closing;
  }

  /**
   * Runs a named (prepared once per connection) statement in a span of its own; timed when
   * metrics are on; storage faults as StorageUnavailableError.
   */
  private async query<T = PetRow>(key: QueryKey, values: unknown[], pool = this.pool): Promise<T[]> {
    if (this.closing) throw new Error("pet store is closed");
    const timer = this.timers[key];
    const span = querySpan("postgresql", QUERY_NAMES[key]);
    const started = timer && performance.now();
    let failed = true;
    try {
      const result = await pool.query({ name: key, text: POSTGRES_STATEMENTS[key], values });
      failed = false;
      return result.rows as T[];
    } catch (err) {
      throw asStoreError(err);
    } finally {
      if (timer) timer.observe((performance.now() - started!) / 1000, span);
      endQuerySpan(span, failed);
    }
  }
}
