import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { KeyEvent, KeyRecord } from "../../../lib/key-record.ts";
import { withResultCode } from "../../../lib/sqlite.ts";
import { KEY_CHANGED_MEANWHILE, KEY_COLUMNS, keyColumnValues, keyUpdateQuery } from "../rows.ts";
import type { AdminTokenRecord, IdempotencyClaim, NewEvent } from "../store.ts";
import { runWebhookWrite, type WebhookWriteRequest } from "./webhook-writes.ts";
import { PRUNE_STATEMENTS, type UsageReportApplied, type UsageReportWrite } from "../usage.ts";
import { applyUsageSteps, type UsageStepResult } from "../usage-apply.ts";

/**
 * The registry's writes, each one transaction (BEGIN IMMEDIATE: the file's one writer, waiting
 * busy_timeout for another process's) that changes its rows and appends its event. They run in
 * the writer's worker thread (writer-worker.ts), so a lock wait or a COMMIT's fsync never holds
 * the key service's event loop. Plain data in and out: requests cross the thread boundary.
 */
export type WriteRequest =
  | { op: "createKey"; record: KeyRecord; event: NewEvent; idempotency?: IdempotencyClaim }
  | { op: "updateKey"; record: KeyRecord; event: NewEvent; previous?: KeyRecord }
  | { op: "touchLastUsed"; id: string; at: number }
  | { op: "appendEvent"; event: NewEvent }
  | { op: "createAdminToken"; token: AdminTokenRecord; event: NewEvent }
  | { op: "revokeAdminToken"; id: string; at: number; event: NewEvent }
  | { op: "applyUsageReport"; report: UsageReportWrite }
  | { op: "pruneUsage"; now: number }
  | { op: "countSignup"; address: string; day: string; limit: number }
  | WebhookWriteRequest;

export type WriteResult = KeyEvent | UsageReportApplied | boolean | undefined;

/** An error a write throws on purpose; the store turns the code into its error class. */
export const CONFLICT = "SQLITE_CONSTRAINT";

function appendEvent(db: DatabaseSync, e: NewEvent): KeyEvent {
  const { seq } = db
    .prepare("INSERT INTO events (seq, at, actor, type, key_id, changes) VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM events), ?, ?, ?, ?, ?) RETURNING seq")
    .get(e.at, e.actor, e.type, e.keyId, JSON.stringify(e.changes))!;
  return { seq: Number(seq), ...e };
}

function createKey(db: DatabaseSync, record: KeyRecord, event: NewEvent, claim?: IdempotencyClaim): KeyEvent {
  if (claim) {
    db.prepare("DELETE FROM idempotency WHERE expires_at <= ?").run(event.at);
    const { tokenId, key, expiresAt, result } = claim;
    db.prepare("INSERT INTO idempotency (token_id, key, request_hash, status, body, expires_at) VALUES (?, ?, ?, ?, ?, ?)").run(
      tokenId,
      key,
      result.requestHash,
      result.status,
      result.body,
      expiresAt,
    );
  }
  db.prepare(`INSERT INTO keys (${KEY_COLUMNS.join(", ")}) VALUES (${KEY_COLUMNS.map(() => "?").join(", ")})`).run(...keyColumnValues(record));
  return appendEvent(db, event);
}

function updateKey(db: DatabaseSync, record: KeyRecord, event: NewEvent, previous?: KeyRecord): KeyEvent {
  const { sql, values } = keyUpdateQuery(record, previous, "sqlite");
  const { changes } = db.prepare(sql).run(...(values as SQLInputValue[]));
  if (Number(changes) !== 1) {
    if (!db.prepare("SELECT 1 FROM keys WHERE id = ?").get(record.id)) throw new Error(`no key ${record.id} to update`);
    throw Object.assign(new Error(KEY_CHANGED_MEANWHILE), { code: CONFLICT });
  }
  return appendEvent(db, event);
}

function createAdminToken(db: DatabaseSync, t: AdminTokenRecord, event: NewEvent): KeyEvent {
  db.prepare("INSERT INTO admin_tokens (id, name, scopes, hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)").run(
    t.id,
    t.name,
    JSON.stringify(t.scopes),
    t.hash,
    t.createdAt,
    t.revokedAt,
  );
  return appendEvent(db, event);
}

function revokeAdminToken(db: DatabaseSync, id: string, at: number, event: NewEvent): KeyEvent | undefined {
  const { changes } = db.prepare("UPDATE admin_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").run(at, id);
  return Number(changes) === 1 ? appendEvent(db, event) : undefined;
}

function countSignup(db: DatabaseSync, address: string, day: string, limit: number): boolean {
  db.prepare("DELETE FROM signup_counts WHERE day < ?").run(day);
  // No row back when the update's WHERE refuses: the address had `limit` already.
  const counted = db
    .prepare(
      "INSERT INTO signup_counts (address, day, count) VALUES (?, ?, 1) ON CONFLICT (address, day) DO UPDATE SET count = count + 1 WHERE count < ? RETURNING count",
    )
    .get(address, day, limit);
  return counted !== undefined;
}

/** Runs usage-apply.ts's steps on this connection, in the caller's transaction. */
function applyUsageReport(db: DatabaseSync, report: UsageReportWrite): UsageReportApplied {
  const steps = applyUsageSteps(report, (n) => `?${n}`);
  let result: UsageStepResult;
  for (;;) {
    const step = steps.next(result);
    if (step.done) return step.value;
    const s = step.value;
    if ("run" in s) result = Number(db.prepare(s.run).run(...(s.values as SQLInputValue[])).changes);
    else if ("get" in s) result = db.prepare(s.get).get(...(s.values as SQLInputValue[]));
    else result = appendEvent(db, s.event);
  }
}

function run(db: DatabaseSync, w: WriteRequest): WriteResult {
  switch (w.op) {
    case "createKey":
      return createKey(db, w.record, w.event, w.idempotency);
    case "updateKey":
      return updateKey(db, w.record, w.event, w.previous);
    case "touchLastUsed":
      // Last use only moves forward: reports from several gateways arrive in any order.
      db.prepare("UPDATE keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)").run(w.at, w.id, w.at);
      return undefined;
    case "appendEvent":
      return appendEvent(db, w.event);
    case "createAdminToken":
      return createAdminToken(db, w.token, w.event);
    case "revokeAdminToken":
      return revokeAdminToken(db, w.id, w.at, w.event);
    case "countSignup":
      return countSignup(db, w.address, w.day, w.limit);
    case "applyUsageReport":
      return applyUsageReport(db, w.report);
    case "pruneUsage":
      for (const { sql, age } of PRUNE_STATEMENTS((n) => `?${n}`)) db.prepare(sql).run(w.now - age);
      return undefined;
    default:
      return runWebhookWrite(db, w, (e) => appendEvent(db, e));
  }
}

/** Runs one write as one transaction; SQLite's errors carry their result code's name (lib/sqlite.ts). */
export function commitWrite(db: DatabaseSync, w: WriteRequest): WriteResult {
  try {
    db.exec("BEGIN IMMEDIATE");
    const result = run(db, w);
    db.exec("COMMIT");
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw withResultCode(err);
  }
}
