/**
 * A key's record in the key service's registry and the change events about it: what the key
 * service stores and serves, what the change feed carries to gateways, and what the webhooks
 * deliver. Shared by keys/ (which writes them) and gateway/auth/ (which follows them).
 *
 * Times are Unix milliseconds inside the processes and ISO 8601 strings (or null) on the wire.
 */
import type { PlanName } from "./api-key-format.ts";
import type { PlanLimits } from "./plans.ts";

export const SCOPES = ["pets:read", "pets:write"] as const;
export type Scope = (typeof SCOPES)[number];

/** What a key may do when nobody said otherwise: everything (DESIGN, Scopes and networks). */
export const DEFAULT_SCOPES: readonly Scope[] = SCOPES;

/** A key as the registry holds it. Never the token: a token can only be re-derived by signing. */
export interface KeyRecord {
  /** `sub` of every token of this key, e.g. key_0123456789abcdef. */
  id: string;
  name: string;
  /** The operator's customer or user id; null when none was given. */
  ownerId: string | null;
  /** A small JSON object of the operator's. */
  metadata: Record<string, unknown>;
  /** The plan in force (an update overrides the plan the token carries). */
  plan: PlanName;
  limits: PlanLimits;
  scopes: Scope[];
  /** IPv4/IPv6 CIDRs the key may be used from; empty: from anywhere. */
  allowedCidrs: string[];
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** 0 for the issued token, n after the n-th roll. */
  generation: number;
  /** Older generations that still work, and until when (ms). */
  graceUntil: Record<string, number>;
  /** The signing pair of the newest token. */
  kid: string;
  lastUsedAt: number | null;
}

/** A key's state as `GET /v1/keys/{id}` shows it (DESIGN, Key service: Shapes). */
export interface KeyRecordJson {
  id: string;
  name: string;
  ownerId: string | null;
  metadata: Record<string, unknown>;
  plan: PlanName;
  limits: PlanLimits;
  scopes: Scope[];
  allowedCidrs: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  generation: number;
  lastUsedAt: string | null;
}

export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function keyRecordJson(r: KeyRecord): KeyRecordJson {
  return {
    id: r.id,
    name: r.name,
    ownerId: r.ownerId,
    metadata: r.metadata,
    plan: r.plan,
    limits: { perMinute: r.limits.perMinute, perDay: r.limits.perDay },
    scopes: [...r.scopes],
    allowedCidrs: [...r.allowedCidrs],
    createdAt: new Date(r.createdAt).toISOString(),
    expiresAt: isoOrNull(r.expiresAt),
    revokedAt: isoOrNull(r.revokedAt),
    generation: r.generation,
    lastUsedAt: isoOrNull(r.lastUsedAt),
  };
}

export type KeyState = "active" | "revoked" | "expired";

export const keyState = (r: Pick<KeyRecord, "revokedAt" | "expiresAt">, nowMs: number): KeyState =>
  r.revokedAt !== null ? "revoked" : r.expiresAt !== null && r.expiresAt <= nowMs ? "expired" : "active";

export const KEY_EVENT_TYPES = ["key.created", "key.updated", "key.rolled", "key.revoked", "key.banned", "usage.threshold"] as const;
export const EVENT_TYPES = [
  ...KEY_EVENT_TYPES,
  "admin_token.created",
  "admin_token.revoked",
  "webhook.created",
  "webhook.deleted",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * One row of the events table: the audit log, the change feed gateways follow and the webhooks'
 * outbox. `seq` has no gaps and rows become visible in `seq` order, so a follower that read up to
 * n never misses a row below n.
 */
export interface KeyEvent {
  seq: number;
  at: number;
  /** The admin token's name, or `cli`. */
  actor: string;
  type: EventType;
  keyId: string | null;
  /**
   * What changed. For key events, the key record's wire fields that changed with their new
   * values (key.created: every field of KeyRecordJson except lastUsedAt), plus for key.rolled
   * `graceUntil` ({generation: ISO time}) and for every key event `kid` when the newest token's
   * signing pair changed. Never a token or a secret.
   */
  changes: Record<string, unknown>;
}

export interface KeyEventJson {
  seq: number;
  at: string;
  actor: string;
  type: EventType;
  keyId: string | null;
  changes: Record<string, unknown>;
}

export const keyEventJson = (e: KeyEvent): KeyEventJson => ({
  seq: e.seq,
  at: new Date(e.at).toISOString(),
  actor: e.actor,
  type: e.type,
  keyId: e.keyId,
  changes: e.changes,
});

/** One page of a list (keys, events, tokens): as pets are paged. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
