/**
 * The key registry: one interface, two stores (registry/sqlite/ by default, registry/postgres/ for
 * several key-service replicas on one database), held to the same behaviour by one conformance
 * suite (tests/unit/keys/registry/conformance.ts). The store only persists; what a change means
 * (validation, signing, which event) is keys/operations' business.
 *
 * Every write appends its event in the same transaction as the change it describes, with the
 * next `seq`: no gaps, and rows become visible in seq order (on PostgreSQL a one-row counter
 * updated in the transaction serialises writers), so a follower reading `after=n` never misses
 * a row below a seq it has seen.
 *
 * A storage fault (disk full, a lock held past the wait, PostgreSQL unreachable) rejects with
 * StorageUnavailableError (lib/storage-faults.ts): nothing was written, and the store serves again
 * once the fault clears. Opening migrates the schema (sqlite/migrations.ts, postgres/migrations.ts).
 */
import type { EventType, KeyEvent, KeyRecord, KeyState, Page } from "../../lib/key-record.ts";
import type { PlanName } from "../../lib/api-key-format.ts";
import type { WebhookRegistry } from "./webhooks.ts";
import type { UsageBucket, UsageGranularity, UsageReportApplied, UsageReportWrite } from "./usage.ts";

/** An event before the store numbers it. */
export interface NewEvent {
  at: number;
  actor: string;
  type: EventType;
  keyId: string | null;
  changes: Record<string, unknown>;
}

export interface KeyFilter {
  ownerId?: string;
  plan?: PlanName;
  /** Judged at `now` (expired keys are those whose expiresAt has passed). */
  state?: KeyState;
  now: number;
}

/** A remembered answer to a create with an Idempotency-Key (per admin token, 24 h). */
export interface IdempotentResult {
  /** SHA-256 of the request body: the same key with another body is a 422. */
  requestHash: string;
  status: number;
  /** The answer's JSON body, token included: stored encrypted is not needed, the row expires in 24 h. */
  body: string;
}

export interface IdempotencyClaim {
  tokenId: string;
  key: string;
  expiresAt: number;
  result: IdempotentResult;
}

export interface AdminTokenRecord {
  id: string;
  name: string;
  scopes: string[];
  /** SHA-256 (hex) of the token; the token itself is never stored. */
  hash: string;
  createdAt: number;
  revokedAt: number | null;
}

/** Webhooks' part: ./webhooks.ts. */
export interface KeyRegistry extends WebhookRegistry {
  /**
   * Creates the key (its id must be new) with its event. With `idempotency`, records the answer in
   * the same transaction; a live claim of the same token and key makes it a RegistryConflictError
   * (nothing written: the caller answers from findIdempotent). Expired claims are deleted here.
   */
  createKey(record: KeyRecord, event: NewEvent, idempotency?: IdempotencyClaim): Promise<KeyEvent>;
  /**
   * Replaces the key's stored record with `record` (same id; lastUsedAt is left to touchLastUsed)
   * and appends the event. With `previous` (the record the change was computed from), only if the
   * stored record is still that one: else RegistryConflictError and nothing written, so two
   * writers (processes, replicas) never lose each other's change; the caller reads and retries.
   */
  updateKey(record: KeyRecord, event: NewEvent, previous?: KeyRecord): Promise<KeyEvent>;
  getKey(id: string): Promise<KeyRecord | undefined>;
  /** Oldest first (by createdAt, then id); `cursor` is opaque, from the previous page (InvalidCursorError otherwise). */
  listKeys(filter: KeyFilter, limit: number, cursor?: string): Promise<Page<KeyRecord>>;
  /** Records last use; not an event (gateways report it; it changes every request). */
  touchLastUsed(id: string, at: number): Promise<void>;

  /** The remembered answer, unless it expired. */
  findIdempotent(tokenId: string, key: string, now: number): Promise<IdempotentResult | undefined>;

  /** Events with seq > after, oldest first, at most `limit`. */
  events(after: number, limit: number): Promise<KeyEvent[]>;
  /** The highest seq written (0 when none). */
  lastSeq(): Promise<number>;
  /** Appends an event that changes no key record (key.banned, usage.threshold). */
  appendEvent(event: NewEvent): Promise<KeyEvent>;

  createAdminToken(token: AdminTokenRecord, event: NewEvent): Promise<KeyEvent>;
  /** Sets revokedAt with the event; undefined (and no event) when there is no such token or it was revoked already. */
  revokeAdminToken(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined>;
  findAdminTokenByHash(hash: string): Promise<AdminTokenRecord | undefined>;
  listAdminTokens(): Promise<AdminTokenRecord[]>;

  /**
   * Counts one self-serve sign-up of `address` on the UTC `day` (YYYY-MM-DD) unless `limit` are
   * counted already; whether it was counted. Atomic: concurrent sign-ups on any replica never count
   * past the limit. Counts of earlier days are deleted as it goes.
   */
  countSignup(address: string, day: string, limit: number): Promise<boolean>;
  /**
   * Applies a gateway's usage report in one transaction (keys/registry/usage.ts): its report id
   * remembered (seen before → `duplicate`, nothing written), its counts added to the hourly and
   * daily buckets, last use moved forward, a key.banned event per ban not recorded yet, and a
   * usage.threshold event per key, UTC day and percent reached for the first time.
   */
  applyUsageReport(report: UsageReportWrite): Promise<UsageReportApplied>;
  /** A key's buckets whose start is in [from, to), oldest first; buckets with no request are absent. */
  usageHistory(keyId: string, granularity: UsageGranularity, from: number, to: number): Promise<UsageBucket[]>;
  /** Deletes what is past its retention at `now`: hourly buckets after 35 days, daily after 400, old report ids. */
  pruneUsage(now: number): Promise<void>;

  /** Whether the database answers (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A write that lost to a unique constraint (a key id or an admin token name taken). */
export class RegistryConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RegistryConflictError";
  }
}

/** A listKeys cursor that no page of this registry gave. */
export class InvalidCursorError extends Error {
  constructor() {
    super("not a cursor this list gave");
    this.name = "InvalidCursorError";
  }
}
