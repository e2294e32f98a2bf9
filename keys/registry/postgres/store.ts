import pg from "pg";
import type { KeyEvent, KeyRecord, Page } from "../../../lib/key-record.ts";
import type { SchemaReport } from "../../../lib/migrations.ts";
import { asStoreError } from "../../../lib/postgres-faults.ts";
import { postgresPoolSettings } from "../../../lib/postgres-pool.ts";
import {
  ADMIN_TOKEN_COLUMNS,
  adminTokenOfRow,
  EVENT_COLUMNS,
  KEY_CHANGED_MEANWHILE,
  KEY_COLUMNS,
  keyColumnValues,
  keyEventOfRow,
  keyPage,
  keyPageQuery,
  keyRecordOfRow,
  keyUpdateQuery,
} from "../rows.ts";
import { RegistryConflictError, type AdminTokenRecord, type IdempotencyClaim, type IdempotentResult, type KeyFilter, type KeyRegistry, type NewEvent } from "../store.ts";
import { DELIVERY_COLUMNS, deliveryCursorAfter, deliveryPage, WEBHOOK_COLUMNS, webhookOfRow } from "../webhook-rows.ts";
import type { DeliveryAttempt, NewWebhook, WebhookProgress, WebhookSubscription } from "../webhooks.ts";
import { historySql, PRUNE_STATEMENTS, usageBucketOfRow, type UsageBucket, type UsageGranularity, type UsageReportApplied, type UsageReportWrite } from "../usage.ts";
import { applyUsageSteps, type UsageStepResult } from "../usage-apply.ts";
import { migrateRegistryPostgres } from "./migrations.ts";

const POOL_SETTINGS = postgresPoolSettings("key-service");

export const DEFAULT_REGISTRY_POOL_SIZE = 5;

const INSERT_KEY = `INSERT INTO keys (${KEY_COLUMNS.join(", ")}) VALUES (${KEY_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`;
/** PostgreSQL's unique_violation, by the constraint it hit. */
function conflictOf(err: unknown): RegistryConflictError | undefined {
  const { code, constraint } = (err ?? {}) as { code?: unknown; constraint?: unknown };
  if (code !== "23505") return undefined;
  const c = String(constraint);
  return new RegistryConflictError(
    c.startsWith("idempotency")
      ? "that Idempotency-Key is in use"
      : c === "admin_tokens_name_key"
        ? "an admin token of that name exists"
        : c.startsWith("admin_tokens")
          ? "that admin token exists"
          : "a key with that id exists",
  );
}

/**
 * The registry in a PostgreSQL database shared by any number of key-service replicas (and the
 * command line). Each write is one transaction that appends its event under the event_counter
 * row's lock (migrations.ts). Storage faults reject with StorageUnavailableError.
 */
export class PostgresKeyRegistry implements KeyRegistry {
  private closing: Promise<void> | undefined;

  private readonly pool: pg.Pool;
  readonly schema: SchemaReport;

  private constructor(pool: pg.Pool, schema: SchemaReport) {
    this.pool = pool;
    this.schema = schema;
  }

  /** Connects to `url` (postgres://…) and migrates the schema under the advisory lock. */
  static async open(url: string, options: { poolSize?: number; onIdleError?: (err: Error) => void } = {}): Promise<PostgresKeyRegistry> {
    const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? DEFAULT_REGISTRY_POOL_SIZE, ...POOL_SETTINGS });
    // An idle connection that breaks (the server restarts) is dropped and reported here; unhandled, it would end the process.
    pool.on("error", (err) => options.onIdleError?.(err));
    try {
      return new PostgresKeyRegistry(pool, await migrateRegistryPostgres(pool));
    } catch (err) {
      await pool.end().catch(() => {});
      throw asStoreError(err);
    }
  }

  createKey(record: KeyRecord, event: NewEvent, idempotency?: IdempotencyClaim): Promise<KeyEvent> {
    return this.transaction(async (c) => {
      if (idempotency) {
        const { tokenId, key, expiresAt, result } = idempotency;
        await c.query("DELETE FROM idempotency WHERE expires_at <= $1", [event.at]);
        await c.query("INSERT INTO idempotency (token_id, key, request_hash, status, body, expires_at) VALUES ($1, $2, $3, $4, $5, $6)", [
          tokenId,
          key,
          result.requestHash,
          result.status,
          result.body,
          expiresAt,
        ]);
      }
      await c.query(INSERT_KEY, keyColumnValues(record));
      return appendEvent(c, event);
    });
  }

  updateKey(record: KeyRecord, event: NewEvent, previous?: KeyRecord): Promise<KeyEvent> {
    return this.transaction(async (c) => {
      const { sql, values } = keyUpdateQuery(record, previous, "postgres");
      const { rowCount } = await c.query(sql, values);
      if (rowCount !== 1) {
        const { rowCount: found } = await c.query("SELECT 1 FROM keys WHERE id = $1", [record.id]);
        if (found !== 1) throw new Error(`no key ${record.id} to update`);
        throw new RegistryConflictError(KEY_CHANGED_MEANWHILE);
      }
      return appendEvent(c, event);
    });
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    const [row] = await this.query(`SELECT ${KEY_COLUMNS.join(", ")} FROM keys WHERE id = $1`, [id]);
    return row && keyRecordOfRow(row);
  }

  async listKeys(filter: KeyFilter, limit: number, cursor?: string): Promise<Page<KeyRecord>> {
    const { sql, values } = keyPageQuery(filter, limit, cursor, (n) => `$${n}`);
    return keyPage(await this.query(sql, values), limit);
  }

  async touchLastUsed(id: string, at: number): Promise<void> {
    // Last use only moves forward: reports from several gateways arrive in any order.
    await this.query("UPDATE keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)", [id, at]);
  }

  async findIdempotent(tokenId: string, key: string, now: number): Promise<IdempotentResult | undefined> {
    const [row] = await this.query("SELECT request_hash, status, body FROM idempotency WHERE token_id = $1 AND key = $2 AND expires_at > $3", [tokenId, key, now]);
    return row && { requestHash: row.request_hash as string, status: Number(row.status), body: row.body as string };
  }

  async events(after: number, limit: number): Promise<KeyEvent[]> {
    return (await this.query(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, [after, limit])).map(keyEventOfRow);
  }

  async lastSeq(): Promise<number> {
    const [row] = await this.query("SELECT coalesce(max(seq), 0) AS seq FROM events", []);
    return Number(row!.seq);
  }

  appendEvent(event: NewEvent): Promise<KeyEvent> {
    return this.transaction((c) => appendEvent(c, event));
  }

  createAdminToken(t: AdminTokenRecord, event: NewEvent): Promise<KeyEvent> {
    return this.transaction(async (c) => {
      await c.query(`INSERT INTO admin_tokens (${ADMIN_TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`, [
        t.id,
        t.name,
        JSON.stringify(t.scopes),
        t.hash,
        t.createdAt,
        t.revokedAt,
      ]);
      return appendEvent(c, event);
    });
  }

  revokeAdminToken(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined> {
    return this.transaction(async (c) => {
      const { rowCount } = await c.query("UPDATE admin_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL", [id, at]);
      return rowCount === 1 ? appendEvent(c, event) : undefined;
    });
  }

  async findAdminTokenByHash(hash: string): Promise<AdminTokenRecord | undefined> {
    const [row] = await this.query(`SELECT ${ADMIN_TOKEN_COLUMNS} FROM admin_tokens WHERE hash = $1`, [hash]);
    return row && adminTokenOfRow(row);
  }

  async listAdminTokens(): Promise<AdminTokenRecord[]> {
    return (await this.query(`SELECT ${ADMIN_TOKEN_COLUMNS} FROM admin_tokens ORDER BY created_at, id`, [])).map(adminTokenOfRow);
  }

  countSignup(address: string, day: string, limit: number): Promise<boolean> {
    return this.transaction(async (c) => {
      await c.query("DELETE FROM signup_counts WHERE day < $1", [day]);
      // ON CONFLICT locks the row: concurrent sign-ups queue, and the WHERE refuses past the limit (no row back).
      const { rowCount } = await c.query(
        "INSERT INTO signup_counts (address, day, count) VALUES ($1, $2, 1) ON CONFLICT (address, day) DO UPDATE SET count = signup_counts.count + 1 WHERE signup_counts.count < $3 RETURNING count",
        [address, day, limit],
      );
      return rowCount === 1;
    });
  }

  createWebhook(w: NewWebhook, event: NewEvent): Promise<KeyEvent> {
    return this.transaction(async (c) => {
      const created = await appendEvent(c, event);
      await c.query("INSERT INTO webhooks (id, url, events, secret, created_at, cursor) VALUES ($1, $2, $3, $4, $5, $6)", [
        w.id,
        w.url,
        JSON.stringify(w.events),
        w.secret,
        w.createdAt,
        created.seq,
      ]);
      return created;
    });
  }

  deleteWebhook(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined> {
    return this.transaction(async (c) => {
      const { rowCount } = await c.query("UPDATE webhooks SET deleted_at = $2, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND deleted_at IS NULL", [id, at]);
      return rowCount === 1 ? appendEvent(c, event) : undefined;
    });
  }

  async getWebhook(id: string): Promise<WebhookSubscription | undefined> {
    const [row] = await this.query(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id]);
    return row && webhookOfRow(row);
  }

  async listWebhooks(): Promise<WebhookSubscription[]> {
    return (await this.query(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`, [])).map(webhookOfRow);
  }

  async leaseWebhook(id: string, owner: string, now: number, until: number): Promise<boolean> {
    const rows = await this.query(
      "UPDATE webhooks SET lease_owner = $2, lease_until = $3 WHERE id = $1 AND deleted_at IS NULL AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= $4) RETURNING id",
      [id, owner, until, now],
    );
    return rows.length === 1;
  }

  async releaseWebhook(id: string, owner: string): Promise<void> {
    await this.query("UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2", [id, owner]);
  }

  recordDelivery(id: string, owner: string, a: DeliveryAttempt | null, p: WebhookProgress): Promise<boolean> {
    return this.transaction(async (c) => {
      const { rowCount } = await c.query(
        "UPDATE webhooks SET cursor = $3, failures = $4, first_attempt_at = $5, next_attempt_at = $6 WHERE id = $1 AND lease_owner = $2",
        [id, owner, p.cursor, p.failures, p.firstAttemptAt, p.nextAttemptAt],
      );
      if (rowCount !== 1) return false;
      if (a) {
        await c.query("INSERT INTO webhook_deliveries (webhook_id, event_seq, type, attempt, status, at, error) VALUES ($1, $2, $3, $4, $5, $6, $7)", [
          id,
          a.eventSeq,
          a.type,
          a.attempt,
          a.status,
          a.at,
          a.error,
        ]);
      }
      return true;
    });
  }

  async listDeliveries(id: string, limit: number, cursor?: string): Promise<Page<DeliveryAttempt>> {
    const after = deliveryCursorAfter(cursor);
    return deliveryPage(await this.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [id, after, limit + 1]), limit);
  }

  async pruneDeliveries(before: number): Promise<void> {
    await this.query("DELETE FROM webhook_deliveries WHERE at < $1", [before]);
  }

  async keyEvents(keyId: string, throughSeq: number): Promise<KeyEvent[]> {
    return (await this.query(`SELECT ${EVENT_COLUMNS} FROM events WHERE key_id = $1 AND seq <= $2 ORDER BY seq`, [keyId, throughSeq])).map(keyEventOfRow);
  }

  applyUsageReport(report: UsageReportWrite): Promise<UsageReportApplied> {
    return this.transaction(async (c) => {
      const steps = applyUsageSteps(report, (n) => `$${n}`);
      let result: UsageStepResult;
      for (;;) {
        const step = steps.next(result);
        if (step.done) return step.value;
        const s = step.value;
        if ("run" in s) result = (await c.query(s.run, s.values)).rowCount ?? 0;
        else if ("get" in s) result = (await c.query(s.get, s.values)).rows[0];
        else result = await appendEvent(c, s.event);
      }
    });
  }

  async usageHistory(keyId: string, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    return (await this.query(historySql(granularity, (n) => `$${n}`), [keyId, from, to])).map(usageBucketOfRow);
  }

  async pruneUsage(now: number): Promise<void> {
    await this.transaction(async (c) => {
      for (const { sql, age } of PRUNE_STATEMENTS((n) => `$${n}`)) await c.query(sql, [now - age]);
    });
  }

  async ping(): Promise<void> {
    await this.query("SELECT 1", []);
  }

  close(): Promise<void> {
    this.closing ??= this.pool.end();
    return this.closing;
  }

  private async query(sql: string, values: unknown[]): Promise<Record<string, unknown>[]> {
    if (this.closing) throw new Error("key registry is closed");
    try {
      return (await this.pool.query(sql, values)).rows;
    } catch (err) {
      throw asStoreError(err);
    }
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    if (this.closing) throw new Error("key registry is closed");
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw asStoreError(err);
    }
    try {
      await client.query("BEGIN");
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err instanceof RegistryConflictError ? err : (conflictOf(err) ?? asStoreError(err));
    } finally {
      client.release();
    }
  }
}

/** The next seq from the counter row (locked until this transaction ends), then the event under it. */
async function appendEvent(client: pg.PoolClient, e: NewEvent): Promise<KeyEvent> {
  const { rows } = await client.query<{ seq: string }>("UPDATE event_counter SET seq = seq + 1 RETURNING seq");
  const seq = Number(rows[0]!.seq);
  await client.query("INSERT INTO events (seq, at, actor, type, key_id, changes) VALUES ($1, $2, $3, $4, $5, $6)", [
    seq,
    e.at,
    e.actor,
    e.type,
    e.keyId,
    JSON.stringify(e.changes),
  ]);
  return { seq, ...e };
}
