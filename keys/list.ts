import type { PlanName } from "../lib/api-key-format.ts";
import { planOverride } from "../lib/key-changes.ts";
import { readChanges } from "./changes.ts";
import { readIssued, readRevoked } from "./registry.ts";

/** One issued key as `list` shows it. Never the token: it is not stored anywhere. */
export interface KeyListing {
  keyId: string;
  name: string;
  /** The plan in force: the last `set-plan`'s, else the one it was issued with. */
  plan: PlanName;
  /** Enterprise limits in force; null for the other plans' fixed limits. */
  perMinute: number | null;
  perDay: number | null;
  /** ISO time of the last `set-plan`, or null. */
  planChangedAt: string | null;
  /** How many times it was rolled (the newest key's generation), and when last. */
  rolls: number;
  rolledAt: string | null;
  /** ISO time of the last admitted request as the limiter's store knows it, or null. */
  lastUsedAt: string | null;
  /** Signing pair. */
  kid: string;
  createdAt: string;
  /** ISO time or null (never expires). */
  expiresAt: string | null;
  expired: boolean;
  /** ISO time of revocation, or null. */
  revokedAt: string | null;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace(".000Z", "Z");

export interface ListOptions {
  nowMs?: number;
  /** Last use per key id, Unix ms (keys/usage.ts `lastUses`). */
  lastUses?: ReadonlyMap<string, number>;
}

export function listKeys(keysDir: string, opts: ListOptions = {}): KeyListing[] {
  const nowMs = opts.nowMs ?? Date.now();
  const revoked = readRevoked(keysDir).revoked;
  const changes = readChanges(keysDir).keys;
  return readIssued(keysDir).map((k) => {
    const r = revoked[k.keyId];
    const change = changes[k.keyId];
    const inForce = planOverride(change) ?? k;
    const lastUsed = opts.lastUses?.get(k.keyId);
    return {
      keyId: k.keyId,
      name: k.name,
      plan: inForce.plan,
      perMinute: inForce.plan === "enterprise" ? inForce.perMinute! : null,
      perDay: inForce.plan === "enterprise" ? inForce.perDay! : null,
      planChangedAt: change?.planChangedAt === undefined ? null : iso(change.planChangedAt),
      rolls: change?.generation ?? 0,
      rolledAt: change?.rolledAt === undefined ? null : iso(change.rolledAt),
      lastUsedAt: lastUsed === undefined ? null : new Date(lastUsed).toISOString(),
      kid: k.kid,
      createdAt: iso(k.createdAt),
      expiresAt: k.expiresAt === null ? null : iso(k.expiresAt),
      expired: k.expiresAt !== null && k.expiresAt * 1000 <= nowMs,
      revokedAt: r ? iso(r.revokedAt) : null,
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
