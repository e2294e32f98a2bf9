import type { PlanName } from "../lib/api-key-format.ts";
import type { KeyEvent, KeyRecord } from "../lib/key-record.ts";
import type { KeyRegistry } from "./registry/store.ts";

/** One key as `list` shows it. Never the token: it is not stored anywhere. */
export interface KeyListing {
  keyId: string;
  name: string;
  /** The plan in force. */
  plan: PlanName;
  /** Enterprise limits in force; null for the other plans' fixed limits. */
  perMinute: number | null;
  perDay: number | null;
  /** ISO time of the last change of plan or limits, or null. */
  planChangedAt: string | null;
  /** How many times it was rolled (the newest key's generation), and when last. */
  rolls: number;
  rolledAt: string | null;
  /** ISO time of the last admitted request as the limiter's store (or the registry) knows it, or null. */
  lastUsedAt: string | null;
  /** Signing pair of the newest token. */
  kid: string;
  createdAt: string;
  /** ISO time or null (never expires). */
  expiresAt: string | null;
  expired: boolean;
  /** ISO time of revocation, or null. */
  revokedAt: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** When each key's plan last changed and when it was last rolled, from the events. */
async function lastChanges(registry: KeyRegistry): Promise<Map<string, { plan?: number; roll?: number }>> {
  const changes = new Map<string, { plan?: number; roll?: number }>();
  let after = 0;
  for (;;) {
    const events: KeyEvent[] = await registry.events(after, 1000);
    for (const e of events) {
      if (e.keyId === null) continue;
      const entry = changes.get(e.keyId) ?? {};
      if (e.type === "key.updated" && ("plan" in e.changes || "limits" in e.changes)) entry.plan = e.at;
      if (e.type === "key.rolled") entry.roll = e.at;
      changes.set(e.keyId, entry);
    }
    if (events.length < 1000) return changes;
    after = events.at(-1)!.seq;
  }
}

export interface ListOptions {
  nowMs: number;
  /** Last use per key id, Unix ms, from the limiter's store (keys/usage.ts `lastUses`); else the registry's. */
  lastUses?: ReadonlyMap<string, number>;
}

export async function listKeys(registry: KeyRegistry, keys: readonly KeyRecord[], opts: ListOptions): Promise<KeyListing[]> {
  const changes = await lastChanges(registry);
  return keys.map((k) => {
    const changed = changes.get(k.id);
    const lastUsed = opts.lastUses?.get(k.id) ?? k.lastUsedAt;
    const enterprise = k.plan === "enterprise";
    return {
      keyId: k.id,
      name: k.name,
      plan: k.plan,
      perMinute: enterprise ? k.limits.perMinute : null,
      perDay: enterprise ? k.limits.perDay : null,
      planChangedAt: changed?.plan === undefined ? null : iso(changed.plan),
      rolls: k.generation,
      rolledAt: changed?.roll === undefined ? null : iso(changed.roll),
      lastUsedAt: lastUsed === null || lastUsed === undefined ? null : iso(lastUsed),
      kid: k.kid,
      createdAt: iso(k.createdAt),
      expiresAt: k.expiresAt === null ? null : iso(k.expiresAt),
      expired: k.expiresAt !== null && k.expiresAt <= opts.nowMs,
      revokedAt: k.revokedAt === null ? null : iso(k.revokedAt),
    };
  });
}

/** Left-aligned columns separated by two spaces; a header row first. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [header, ...rows].map(line).join("\n") + "\n";
}

export function formatKeyTable(keys: readonly KeyListing[]): string {
  return formatTable(
    ["ID", "NAME", "PLAN", "LIMITS", "SIGNED BY", "CREATED", "EXPIRES", "REVOKED", "ROLLED", "LAST USED"],
    keys.map((k) => [
      k.keyId,
      k.name || "-",
      k.planChangedAt ? `${k.plan} (since ${k.planChangedAt})` : k.plan,
      k.perMinute === null ? "plan" : `${k.perMinute}/min ${k.perDay}/day`,
      k.kid,
      k.createdAt,
      k.expiresAt === null ? "never" : `${k.expiresAt}${k.expired ? " (expired)" : ""}`,
      k.revokedAt ?? "no",
      k.rolls === 0 ? "no" : `${k.rolls}x, last ${k.rolledAt}`,
      k.lastUsedAt ?? "never",
    ]),
  );
}
