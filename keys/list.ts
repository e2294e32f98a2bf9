import type { PlanName } from "../lib/api-key-format.ts";
import { readIssued, readRevoked } from "./registry.ts";

/** One issued key as `list` shows it. Never the token: it is not stored anywhere. */
export interface KeyListing {
  keyId: string;
  name: string;
  plan: PlanName;
  perMinute: number | null;
  perDay: number | null;
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

export function listKeys(keysDir: string, nowMs = Date.now()): KeyListing[] {
  const revoked = readRevoked(keysDir).revoked;
  return readIssued(keysDir).map((k) => {
    const r = revoked[k.keyId];
    return {
      keyId: k.keyId,
      name: k.name,
      plan: k.plan,
      perMinute: k.perMinute ?? null,
      perDay: k.perDay ?? null,
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
    ["ID", "NAME", "PLAN", "LIMITS", "SIGNED BY", "CREATED", "EXPIRES", "REVOKED"],
    keys.map((k) => [
      k.keyId,
      k.name || "-",
      k.plan,
      k.perMinute === null ? "plan" : `${k.perMinute}/min ${k.perDay}/day`,
      k.kid,
      k.createdAt,
      k.expiresAt === null ? "never" : `${k.expiresAt}${k.expired ? " (expired)" : ""}`,
      k.revokedAt ?? "no",
    ]),
  );
}
