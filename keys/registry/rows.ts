/**
 * What both stores share: how a key record, an event and an admin token sit in table columns
 * (JSON columns for the object-valued fields; times as integer ms), the keys list's cursor and its
 * filter as SQL. Column values come back as SQLite gives them (numbers, JSON text) or as
 * PostgreSQL's driver does (int8 as decimal strings, json parsed): `num` and `json` take either.
 */
import type { PlanName } from "../../lib/api-key-format.ts";
import type { EventType, KeyEvent, KeyRecord, Scope } from "../../lib/key-record.ts";
import { InvalidCursorError, type AdminTokenRecord, type KeyFilter } from "./store.ts";

const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const json = <T>(v: unknown): T => (typeof v === "string" ? JSON.parse(v) : v) as T;

/** The keys table's columns in the order of `keyColumnValues`. */
export const KEY_COLUMNS = [
  "id",
  "name",
  "owner_id",
  "metadata",
  "plan",
  "per_minute",
  "per_day",
  "scopes",
  "allowed_cidrs",
  "created_at",
  "expires_at",
  "revoked_at",
  "generation",
  "grace_until",
  "kid",
  "last_used_at",
] as const;

export function keyColumnValues(r: KeyRecord): (string | number | null)[] {
  return [
    r.id,
    r.name,
    r.ownerId,
    JSON.stringify(r.metadata),
    r.plan,
    r.limits.perMinute,
    r.limits.perDay,
    JSON.stringify(r.scopes),
    JSON.stringify(r.allowedCidrs),
    r.createdAt,
    r.expiresAt,
    r.revokedAt,
    r.generation,
    JSON.stringify(r.graceUntil),
    r.kid,
    r.lastUsedAt,
  ];
}

/** The columns an update writes: `id` names the row, and last use is touchLastUsed's alone. */
const UPDATED_COLUMNS = KEY_COLUMNS.filter((c) => c !== "id" && c !== "last_used_at");
const JSON_COLUMNS: ReadonlySet<string> = new Set(["metadata", "scopes", "allowed_cidrs", "grace_until"]);

/**
 * UPDATE of a key's row in either dialect; with `previous`, only while the row still holds what
 * `previous` says (compare-and-set: a change made meanwhile by another writer wins, and the caller
 * reads again). JSON columns compare as the text written, which JSON.stringify makes the same for
 * the same value (PostgreSQL's json keeps its text as given).
 */
export function keyUpdateQuery(record: KeyRecord, previous: KeyRecord | undefined, dialect: "sqlite" | "postgres"): { sql: string; values: unknown[] } {
  const columnValues = (r: KeyRecord) => new Map<string, unknown>(keyColumnValues(r).map((v, i) => [KEY_COLUMNS[i]!, v]));
  const next = columnValues(record);
  const values: unknown[] = [];
  const p = (value: unknown) => {
    values.push(value);
    return dialect === "sqlite" ? "?" : `$${values.length}`;
  };
  const set = UPDATED_COLUMNS.map((c) => `${c} = ${p(next.get(c))}`).join(", ");
  let where = `id = ${p(record.id)}`;
  if (previous) {
    const before = columnValues(previous);
    for (const c of UPDATED_COLUMNS) {
      where += dialect === "sqlite" ? ` AND ${c} IS ${p(before.get(c))}` : ` AND ${c}${JSON_COLUMNS.has(c) ? "::text" : ""} IS NOT DISTINCT FROM ${p(before.get(c))}`;
    }
  }
  return { sql: `UPDATE keys SET ${set} WHERE ${where}`, values };
}

/** What an update that matched no row means: no such key, or (with `previous`) a change made meanwhile. */
export const KEY_CHANGED_MEANWHILE = "the key changed meanwhile; read it again";

export function keyRecordOfRow(row: Record<string, unknown>): KeyRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    ownerId: (row.owner_id as string | null) ?? null,
    metadata: json(row.metadata),
    plan: row.plan as PlanName,
    limits: { perMinute: num(row.per_minute), perDay: num(row.per_day) },
    scopes: json<Scope[]>(row.scopes),
    allowedCidrs: json<string[]>(row.allowed_cidrs),
    createdAt: num(row.created_at),
    expiresAt: numOrNull(row.expires_at),
    revokedAt: numOrNull(row.revoked_at),
    generation: num(row.generation),
    graceUntil: json(row.grace_until),
    kid: row.kid as string,
    lastUsedAt: numOrNull(row.last_used_at),
  };
}

export const EVENT_COLUMNS = "seq, at, actor, type, key_id, changes";

export function keyEventOfRow(row: Record<string, unknown>): KeyEvent {
  return {
    seq: num(row.seq),
    at: num(row.at),
    actor: row.actor as string,
    type: row.type as EventType,
    keyId: (row.key_id as string | null) ?? null,
    changes: json(row.changes),
  };
}

export const ADMIN_TOKEN_COLUMNS = "id, name, scopes, hash, created_at, revoked_at";

export function adminTokenOfRow(row: Record<string, unknown>): AdminTokenRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    scopes: json<string[]>(row.scopes),
    hash: row.hash as string,
    createdAt: num(row.created_at),
    revokedAt: numOrNull(row.revoked_at),
  };
}

/** The keys list's cursor: where the previous page ended, (createdAt, id), opaque to callers. */
export const keyCursor = (r: Pick<KeyRecord, "createdAt" | "id">): string => Buffer.from(JSON.stringify([r.createdAt, r.id])).toString("base64url");

function parseKeyCursor(cursor: string): [number, string] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string") return [value[0], value[1]];
  } catch {
    // Not JSON: refused below.
  }
  throw new InvalidCursorError();
}

/**
 * One page of keys as SQL in either dialect (`param(n)` names the n-th parameter, from 1): the
 * filter, keyset paging on (created_at, id) after the cursor, one row more than `limit` so the
 * caller knows whether another page follows.
 */
export function keyPageQuery(filter: KeyFilter, limit: number, cursor: string | undefined, param: (n: number) => string): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const p = (value: unknown) => {
    values.push(value);
    return param(values.length);
  };
  const where: string[] = [];
  if (filter.ownerId !== undefined) where.push(`owner_id = ${p(filter.ownerId)}`);
  if (filter.plan !== undefined) where.push(`plan = ${p(filter.plan)}`);
  if (filter.state === "revoked") where.push("revoked_at IS NOT NULL");
  else if (filter.state === "expired") where.push(`revoked_at IS NULL AND expires_at <= ${p(filter.now)}`);
  else if (filter.state === "active") where.push(`revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${p(filter.now)})`);
  if (cursor !== undefined) {
    const [createdAt, id] = parseKeyCursor(cursor);
    where.push(`(created_at > ${p(createdAt)} OR (created_at = ${p(createdAt)} AND id > ${p(id)}))`);
  }
  const sql = `SELECT ${KEY_COLUMNS.join(", ")} FROM keys${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT ${p(limit + 1)}`;
  return { sql, values };
}

/** The page of `rows` (limit + 1 fetched) and its next cursor. */
export function keyPage(rows: Record<string, unknown>[], limit: number): { items: KeyRecord[]; nextCursor: string | null } {
  const items = rows.slice(0, limit).map(keyRecordOfRow);
  return { items, nextCursor: rows.length > limit ? keyCursor(items[items.length - 1]!) : null };
}
