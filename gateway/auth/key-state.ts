/**
 * What this gateway knows of every key, in memory, built from the key service's change feed
 * (key-service-feed.ts replays GET /v1/events from the start, then follows it): the plan and
 * limits in force, revocation, rolls, scopes, allowed networks and expiry. Every request decides
 * from it without I/O; an outage of the key service keeps it as it was.
 */
import { PLAN_NAMES, type PlanName } from "../../lib/api-key-format.ts";
import { DEFAULT_SCOPES, SCOPES, type KeyEventJson, type Scope } from "../../lib/key-record.ts";
import { createNetworkMatcher } from "../../lib/networks.ts";
import type { PlanLimits } from "../../lib/plans.ts";

/** One key's state; a change replaces the object (never mutated), so callers may cache per entry. */
export interface KeyEntry {
  /** The key's name (GET /v1/me shows it); undefined until an event carried it. */
  readonly name: string | undefined;
  /** Undefined until an event carried them (the token's claims apply meanwhile). */
  readonly plan: PlanName | undefined;
  readonly limits: Readonly<PlanLimits> | undefined;
  /** Milliseconds; null while the key is not revoked. */
  readonly revokedAt: number | null;
  /** Milliseconds; null: never expires; undefined: the token's claim applies. The registry's expiry replaces the claim. */
  readonly expiresAt: number | null | undefined;
  /** The newest token's generation; an older one works until its graceUntil entry. */
  readonly generation: number;
  readonly graceUntil: Readonly<Record<string, number>>;
  readonly scopes: ReadonlySet<Scope>;
  /** The key's allowedCidrs as a matcher; undefined: any address (none). */
  readonly allowsAddress: ((address: string) => boolean) | undefined;
}

export interface KeyStateView {
  /** Undefined for a key the feed has not mentioned (yet). */
  get(keyId: string): KeyEntry | undefined;
  /**
   * The key's entry as soon as the feed brings it, or undefined after `timeoutMs`: for a key
   * issued a moment ago whose creation event is still on its way (the only request that waits).
   */
  whenKnown(keyId: string, timeoutMs: number): Promise<KeyEntry | undefined>;
  /** Whether the feed was read to its head once: before that no request can be decided. */
  loaded(): boolean;
}

export interface KeyState extends KeyStateView {
  /** Applies one event of the feed (in seq order); events about other things are ignored. */
  apply(event: KeyEventJson): void;
  markLoaded(): void;
  /** Keys known. */
  size(): number;
}

const ALL_SCOPES: ReadonlySet<Scope> = new Set(DEFAULT_SCOPES);
const NO_KEY: KeyEntry = Object.freeze({
  name: undefined,
  plan: undefined,
  limits: undefined,
  revokedAt: null,
  expiresAt: undefined,
  generation: 0,
  graceUntil: Object.freeze({}),
  scopes: ALL_SCOPES,
  allowsAddress: undefined,
});

const msOrNull = (value: unknown): number | null | undefined => {
  if (value === null) return null;
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
};
const isPlan = (value: unknown): value is PlanName => (PLAN_NAMES as readonly unknown[]).includes(value);
const isLimits = (value: unknown): value is PlanLimits =>
  typeof value === "object" && value !== null && Number.isSafeInteger((value as PlanLimits).perMinute) && Number.isSafeInteger((value as PlanLimits).perDay);
const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((v) => typeof v === "string") ? value : undefined);

/** The entry after an event's `changes` (KeyEvent's doc: the record's wire fields that changed). */
function changedEntry(entry: KeyEntry, changes: Record<string, unknown>): KeyEntry {
  const next: { -readonly [K in keyof KeyEntry]: KeyEntry[K] } = { ...entry };
  if (typeof changes.name === "string") next.name = changes.name;
  if (isPlan(changes.plan)) next.plan = changes.plan;
  if (isLimits(changes.limits)) next.limits = Object.freeze({ perMinute: changes.limits.perMinute, perDay: changes.limits.perDay });
  const revokedAt = msOrNull(changes.revokedAt);
  if (revokedAt !== undefined) next.revokedAt = revokedAt;
  const expiresAt = msOrNull(changes.expiresAt);
  if (expiresAt !== undefined) next.expiresAt = expiresAt;
  if (Number.isSafeInteger(changes.generation)) next.generation = changes.generation as number;
  if (typeof changes.graceUntil === "object" && changes.graceUntil !== null) {
    // A roll carries every grace period still running: the set replaces the one held.
    const grace: Record<string, number> = {};
    for (const [generation, until] of Object.entries(changes.graceUntil)) {
      const ms = msOrNull(until);
      if (ms !== undefined && ms !== null) grace[generation] = ms;
    }
    next.graceUntil = Object.freeze(grace);
  }
  const scopes = strings(changes.scopes);
  // null clears to the default (both); unknown names are dropped (a newer key service's scopes mean nothing here).
  if (scopes) next.scopes = new Set(scopes.filter((s): s is Scope => (SCOPES as readonly string[]).includes(s)));
  else if (changes.scopes === null) next.scopes = ALL_SCOPES;
  const cidrs = changes.allowedCidrs === null ? [] : strings(changes.allowedCidrs);
  if (cidrs) next.allowsAddress = cidrs.length === 0 ? undefined : createNetworkMatcher(cidrs);
  return Object.freeze(next);
}

export function createKeyState(): KeyState {
  const keys = new Map<string, KeyEntry>();
  const waiting = new Map<string, Set<(entry: KeyEntry) => void>>();
  let loaded = false;
  return {
    get: (keyId) => keys.get(keyId),
    whenKnown(keyId, timeoutMs) {
      const known = keys.get(keyId);
      if (known) return Promise.resolve(known);
      return new Promise((resolve) => {
        const waiters = waiting.get(keyId) ?? new Set();
        waiting.set(keyId, waiters);
        const done = (entry: KeyEntry | undefined) => {
          clearTimeout(timer);
          waiters.delete(done);
          if (waiters.size === 0 && waiting.get(keyId) === waiters) waiting.delete(keyId);
          resolve(entry);
        };
        const timer = setTimeout(done, timeoutMs, undefined);
        waiters.add(done);
      });
    },
    loaded: () => loaded,
    markLoaded: () => {
      loaded = true;
    },
    size: () => keys.size,
    apply(event) {
      if (!event.keyId || !event.type.startsWith("key.")) return;
      const entry = changedEntry(keys.get(event.keyId) ?? NO_KEY, event.changes ?? {});
      keys.set(event.keyId, entry);
      for (const wake of waiting.get(event.keyId) ?? []) wake(entry);
    },
  };
}

/** Whether `entry` lets a token of `generation` through at `nowMs` after rolls: the newest always, an older one within its grace. */
export function rolledAway(entry: KeyEntry, generation: number, nowMs: number): boolean {
  if (generation >= entry.generation) return false;
  const until = entry.graceUntil[String(generation)];
  return until === undefined || nowMs >= until;
}
