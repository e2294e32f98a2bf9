import { mkdirSync } from "node:fs";
import path from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { KeyEvent, KeyRecord, Page } from "../../../lib/key-record.ts";
import { REGISTRY_MIGRATIONS_TABLE, type SchemaReport } from "../../../lib/migrations.ts";
import { openDurableWriter } from "../../../lib/sqlite.ts";
import { toStorageError } from "../../../lib/sqlite-faults.ts";
import { WorkerCalls } from "../../../lib/worker-calls.ts";
import { ADMIN_TOKEN_COLUMNS, adminTokenOfRow, EVENT_COLUMNS, KEY_CHANGED_MEANWHILE, KEY_COLUMNS, keyEventOfRow, keyPage, keyPageQuery, keyRecordOfRow } from "../rows.ts";
import { RegistryConflictError, type AdminTokenRecord, type IdempotencyClaim, type IdempotentResult, type KeyFilter, type KeyRegistry, type NewEvent } from "../store.ts";
import { DELIVERY_COLUMNS, deliveryCursorAfter, deliveryPage, WEBHOOK_COLUMNS, webhookOfRow } from "../webhook-rows.ts";
import type { DeliveryAttempt, NewWebhook, WebhookProgress, WebhookSubscription } from "../webhooks.ts";
import { historySql, usageBucketOfRow, type UsageBucket, type UsageGranularity, type UsageReportApplied, type UsageReportWrite } from "../usage.ts";
import { migrateRegistrySqlite } from "./migrations.ts";
import { CONFLICT, type WriteRequest, type WriteResult } from "./writes.ts";

/**
 * The registry in one SQLite file (node:sqlite, WAL, every commit fsynced: lib/sqlite.ts), on two
 * connections as the pet store has them: the writer in a worker thread (writes.ts), the reader
 * here, on the calling thread, for short indexed reads. Several processes may open the file (the
 * key service and the command line): each write is one BEGIN IMMEDIATE transaction, waiting
 * busy_timeout for the other's. Storage faults reject with StorageUnavailableError.
 */
export class SqliteKeyRegistry implements KeyRegistry {
  private closing: Promise<void> | undefined;

  /** The file's folder: where a read-only file system is recognised. */
  private readonly dir: string;
  private readonly reader: DatabaseSync;
  private readonly writer: WorkerCalls<WriteRequest | null, WriteResult>;
  /** The reads' statements by SQL text: a handful (the list's filters make a few more). */
  private readonly statements = new Map<string, StatementSync>();
  readonly schema: SchemaReport;

  private constructor(dir: string, reader: DatabaseSync, writer: WorkerCalls<WriteRequest | null, WriteResult>, schema: SchemaReport) {
    this.dir = dir;
    this.reader = reader;
    this.writer = writer;
    this.schema = schema;
  }

  /** Opens `file` (created with its folder when missing) and brings its schema to the latest version. */
  static async open(file: string): Promise<SqliteKeyRegistry> {
    const dir = path.dirname(path.resolve(file));
    mkdirSync(dir, { recursive: true });
    const reader = openDurableWriter(file);
    const writer = new WorkerCalls<WriteRequest | null, WriteResult>(new URL("./writer-worker.ts", import.meta.url), { file });
    try {
      const schema = migrateRegistrySqlite(reader);
      reader.exec("PRAGMA query_only = 1");
      // The writer opens its connection now: a file it cannot write fails the open, not the first write.
      await writer.call(null);
      return new SqliteKeyRegistry(dir, reader, writer, schema);
    } catch (err) {
      reader.close();
      await writer.close();
      throw toStorageError(err, dir);
    }
  }

  createKey(record: KeyRecord, event: NewEvent, idempotency?: IdempotencyClaim): Promise<KeyEvent> {
    return this.write({ op: "createKey", record, event, ...(idempotency && { idempotency }) }) as Promise<KeyEvent>;
  }

  updateKey(record: KeyRecord, event: NewEvent, previous?: KeyRecord): Promise<KeyEvent> {
    return this.write({ op: "updateKey", record, event, ...(previous && { previous }) }) as Promise<KeyEvent>;
  }

  async getKey(id: string): Promise<KeyRecord | undefined> {
    const row = this.read((prepare) => prepare(`SELECT ${KEY_COLUMNS.join(", ")} FROM keys WHERE id = ?`).get(id));
    return row && keyRecordOfRow(row);
  }

  async listKeys(filter: KeyFilter, limit: number, cursor?: string): Promise<Page<KeyRecord>> {
    const { sql, values } = keyPageQuery(filter, limit, cursor, () => "?");
    return keyPage(this.read((prepare) => prepare(sql).all(...(values as (string | number)[]))), limit);
  }

  async touchLastUsed(id: string, at: number): Promise<void> {
    await this.write({ op: "touchLastUsed", id, at });
  }

  async findIdempotent(tokenId: string, key: string, now: number): Promise<IdempotentResult | undefined> {
    const row = this.read((prepare) =>
      prepare("SELECT request_hash, status, body FROM idempotency WHERE token_id = ? AND key = ? AND expires_at > ?").get(tokenId, key, now),
    );
    return row && { requestHash: row.request_hash as string, status: Number(row.status), body: row.body as string };
  }

  async events(after: number, limit: number): Promise<KeyEvent[]> {
    return this.read((prepare) => prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?`).all(after, limit)).map(keyEventOfRow);
  }

  async lastSeq(): Promise<number> {
    return Number(this.read((prepare) => prepare("SELECT coalesce(max(seq), 0) AS seq FROM events").get())!.seq);
  }

  appendEvent(event: NewEvent): Promise<KeyEvent> {
    return this.write({ op: "appendEvent", event }) as Promise<KeyEvent>;
  }

  createAdminToken(token: AdminTokenRecord, event: NewEvent): Promise<KeyEvent> {
    return this.write({ op: "createAdminToken", token, event }) as Promise<KeyEvent>;
  }

  revokeAdminToken(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined> {
    return this.write({ op: "revokeAdminToken", id, at, event }) as Promise<KeyEvent | undefined>;
  }

  async findAdminTokenByHash(hash: string): Promise<AdminTokenRecord | undefined> {
    const row = this.read((prepare) => prepare(`SELECT ${ADMIN_TOKEN_COLUMNS} FROM admin_tokens WHERE hash = ?`).get(hash));
    return row && adminTokenOfRow(row);
  }

  async listAdminTokens(): Promise<AdminTokenRecord[]> {
    return this.read((prepare) => prepare(`SELECT ${ADMIN_TOKEN_COLUMNS} FROM admin_tokens ORDER BY created_at, id`).all()).map(adminTokenOfRow);
  }

  async countSignup(address: string, day: string, limit: number): Promise<boolean> {
    return (await this.write({ op: "countSignup", address, day, limit })) === true;
  }

  createWebhook(webhook: NewWebhook, event: NewEvent): Promise<KeyEvent> {
    return this.write({ op: "createWebhook", webhook, event }) as Promise<KeyEvent>;
  }

  deleteWebhook(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined> {
    return this.write({ op: "deleteWebhook", id, at, event }) as Promise<KeyEvent | undefined>;
  }

  async getWebhook(id: string): Promise<WebhookSubscription | undefined> {
    const row = this.read((prepare) => prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`).get(id));
    return row && webhookOfRow(row);
  }

  async listWebhooks(): Promise<WebhookSubscription[]> {
    return this.read((prepare) => prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`).all()).map(webhookOfRow);
  }

  leaseWebhook(id: string, owner: string, now: number, until: number): Promise<boolean> {
    return this.write({ op: "leaseWebhook", id, owner, now, until }) as Promise<boolean>;
  }

  async releaseWebhook(id: string, owner: string): Promise<void> {
    await this.write({ op: "releaseWebhook", id, owner });
  }

  recordDelivery(id: string, owner: string, attempt: DeliveryAttempt | null, progress: WebhookProgress): Promise<boolean> {
    return this.write({ op: "recordDelivery", id, owner, attempt, progress }) as Promise<boolean>;
  }

  async listDeliveries(id: string, limit: number, cursor?: string): Promise<Page<DeliveryAttempt>> {
    const after = deliveryCursorAfter(cursor);
    const rows = this.read((prepare) => prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND id > ? ORDER BY id LIMIT ?`).all(id, after, limit + 1));
    return deliveryPage(rows, limit);
  }

  async pruneDeliveries(before: number): Promise<void> {
    await this.write({ op: "pruneDeliveries", before });
  }

  async keyEvents(keyId: string, throughSeq: number): Promise<KeyEvent[]> {
    return this.read((prepare) => prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE key_id = ? AND seq <= ? ORDER BY seq`).all(keyId, throughSeq)).map(keyEventOfRow);
  }

  applyUsageReport(report: UsageReportWrite): Promise<UsageReportApplied> {
    return this.write({ op: "applyUsageReport", report }) as Promise<UsageReportApplied>;
  }

  async usageHistory(keyId: string, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]> {
    return this.read((prepare) => prepare(historySql(granularity, (n) => `?${n}`)).all(keyId, from, to)).map(usageBucketOfRow);
  }

  async pruneUsage(now: number): Promise<void> {
    await this.write({ op: "pruneUsage", now });
  }

  /** A cheap read of the file (its schema version): fails as the reads would. */
  async ping(): Promise<void> {
    this.read((prepare) => prepare(`SELECT max(version) FROM ${REGISTRY_MIGRATIONS_TABLE}`).get());
  }

  close(): Promise<void> {
    this.closing ??= this.writer.close().then(() => this.reader.close());
    return this.closing;
  }

  /** Runs `query` with the reader's statements, each prepared once; storage faults as StorageUnavailableError. */
  private read<T>(query: (prepare: (sql: string) => StatementSync) => T): T {
    if (this.closing) throw new Error("key registry is closed");
    try {
      return query((sql) => {
        let statement = this.statements.get(sql);
        if (!statement) this.statements.set(sql, (statement = this.reader.prepare(sql)));
        return statement;
      });
    } catch (err) {
      throw toStorageError(err, this.dir);
    }
  }

  private async write(request: WriteRequest): Promise<WriteResult> {
    if (this.closing) throw new Error("key registry is closed");
    try {
      return await this.writer.call(request);
    } catch (err) {
      if ((err as { code?: unknown }).code === CONFLICT) throw new RegistryConflictError(conflictMessage(err as Error));
      throw toStorageError(err, this.dir);
    }
  }
}

/** Which unique constraint a write lost to, without SQLite's wording. */
function conflictMessage(err: Error): string {
  if (err.message === KEY_CHANGED_MEANWHILE) return err.message;
  if (/idempotency\./.test(err.message)) return "that Idempotency-Key is in use";
  if (/admin_tokens\.name/.test(err.message)) return "an admin token of that name exists";
  if (/admin_tokens\./.test(err.message)) return "that admin token exists";
  return "a key with that id exists";
}
