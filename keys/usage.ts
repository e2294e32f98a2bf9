import type { Cluster, Redis } from "ioredis";
import { PLAN_NAMES, type PlanName } from "../lib/api-key-format.ts";
import { planOverride, type PlanOverride } from "../lib/key-changes.ts";
import { readUsageFile, usageFilePath } from "../lib/key-usage.ts";
import { limitsFor } from "../lib/plans.ts";
import { redisKey, subjectForKey } from "../lib/redis-keys.ts";
import { countedAt } from "../lib/window-buckets.ts";
import { readChanges } from "./changes.ts";
import { KeysError } from "./errors.ts";
import { findIssued, type IssuedKey } from "./registry.ts";
import { withRedis } from "./redis.ts";
import { resolveKey } from "./revoke.ts";

/** `keys usage --json`: the plan and limits in force and what the key used of them (times ISO 8601 or null). */
export interface KeyUsage {
  keyId: string;
  plan: PlanName;
  limits: { perMinute: number; perDay: number };
  used: { minute: number; day: number };
  remaining: { minute: number; day: number };
  banned: boolean;
  bannedUntil: string | null;
  lastUsedAt: string | null;
}

export interface UsageOptions {
  /** Read the limiter's keys in Redis; without it, what a gateway published to KEYS_DIR/usage.json. */
  redisUrl?: string;
  /** Milliseconds since the epoch (without Redis); Redis TIME is used with it. */
  now?: number;
}

/** What the limiter's store holds for a key. */
interface StoredUsage {
  nowMs: number;
  minute: number;
  day: number;
  bannedUntilMs: number;
  lastUsedMs: number | null;
  /** The record's plan in Redis, when it has one. */
  override?: PlanOverride;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The key's usage; throws KeysError for a key never issued or an unreachable Redis. */
export async function keyUsage(keysDir: string, keyOrId: string, opts: UsageOptions = {}): Promise<KeyUsage> {
  const nowMs = opts.now ?? Date.now();
  const { keyId } = resolveKey(keysDir, keyOrId.trim(), Math.floor(nowMs / 1000));
  const issued = findIssued(keysDir, keyId);
  if (!issued) throw new KeysError(`unknown key id ${JSON.stringify(keyId)}: not in the issued keys of ${keysDir}`);
  const stored = opts.redisUrl
    ? await withRedis(opts.redisUrl, (client) => readRedisUsage(client, keyId)).catch((err: Error) => {
        throw new KeysError(`cannot read usage from Redis (${err.message})`);
      })
    : readPublishedUsage(keysDir, keyId, nowMs);
  return usageReport(issued, stored.override ?? planOverride(readChanges(keysDir).keys[keyId]), stored);
}

function usageReport(issued: IssuedKey, override: PlanOverride | undefined, s: StoredUsage): KeyUsage {
  const plan = override?.plan ?? issued.plan;
  const limits = override ?? limitsFor(issued);
  const banned = s.bannedUntilMs > s.nowMs;
  return {
    keyId: issued.keyId,
    plan,
    limits: { perMinute: limits.perMinute, perDay: limits.perDay },
    used: { minute: s.minute, day: s.day },
    remaining: { minute: Math.max(0, limits.perMinute - s.minute), day: Math.max(0, limits.perDay - s.day) },
    banned,
    bannedUntil: banned ? iso(s.bannedUntilMs) : null,
    lastUsedAt: iso(s.lastUsedMs),
  };
}

/** The limiter's own keys (one slot: they share the key's hash tag) at Redis TIME. */
export async function readRedisUsage(client: Redis | Cluster, keyId: string): Promise<StoredUsage> {
  const subject = subjectForKey(keyId);
  const [[seconds, micros], minute, day, ban, record] = await Promise.all([
    client.time(),
    client.hgetall(redisKey(subject, "m")),
    client.hgetall(redisKey(subject, "d")),
    client.get(redisKey(subject, "ban")),
    client.hmget(redisKey(subject, "rec"), "p", "m", "d", "lu"),
  ]);
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const buckets = (hash: Record<string, string>) =>
    Object.entries(hash).flatMap(([field, count]) => (/^\d+$/.test(field) ? [[Number(field), Number(count)] as const] : []));
  const [p, m, d, lu] = record;
  const usage: StoredUsage = {
    nowMs,
    minute: countedAt(buckets(minute), 60, nowMs),
    day: countedAt(buckets(day), 86_400, nowMs),
    bannedUntilMs: Number(ban ?? 0),
    lastUsedMs: lu ? Number(lu) : null,
  };
  if ((PLAN_NAMES as readonly (string | null | undefined)[]).includes(p) && m && d) usage.override = { plan: p as PlanName, perMinute: Number(m), perDay: Number(d) };
  return usage;
}

/** What a gateway without Redis published (usage.json); nothing used when it published nothing for the key. */
function readPublishedUsage(keysDir: string, keyId: string, nowMs: number): StoredUsage {
  let entry;
  try {
    entry = readUsageFile(keysDir)?.keys[keyId];
  } catch {
    throw new KeysError(`${usageFilePath(keysDir)} is not a usage file a gateway wrote; remove it (the gateway writes it again)`);
  }
  return {
    nowMs,
    minute: countedAt(entry?.windows["60"] ?? [], 60, nowMs),
    day: countedAt(entry?.windows["86400"] ?? [], 86_400, nowMs),
    bannedUntilMs: entry?.bannedUntil ?? 0,
    lastUsedMs: entry?.lastUsedAt ?? null,
  };
}

/** Each key's last admitted request (Unix ms) as the limiter's store knows it: Redis, or usage.json. */
export async function lastUses(keysDir: string, keyIds: readonly string[], redisUrl?: string): Promise<Map<string, number>> {
  const uses = new Map<string, number>();
  if (redisUrl) {
    const found = await withRedis(redisUrl, (client) =>
      Promise.all(keyIds.map((id) => client.hget(redisKey(subjectForKey(id), "rec"), "lu"))),
    ).catch((err: Error) => {
      throw new KeysError(`cannot read last uses from Redis (${err.message})`);
    });
    found.forEach((lu, i) => lu && uses.set(keyIds[i]!, Number(lu)));
  } else {
    const published = readUsageFile(keysDir)?.keys ?? {};
    for (const id of keyIds) {
      const at = published[id]?.lastUsedAt;
      if (at) uses.set(id, at);
    }
  }
  return uses;
}

export function formatUsage(u: KeyUsage): string {
  return [
    `${u.keyId}: plan ${u.plan} (${u.limits.perMinute}/minute, ${u.limits.perDay}/day)`,
    `  minute: ${u.used.minute} used, ${u.remaining.minute} remaining`,
    `  day:    ${u.used.day} used, ${u.remaining.day} remaining`,
    `  banned: ${u.banned ? `until ${u.bannedUntil}` : "no"}`,
    `  last used: ${u.lastUsedAt ?? "never"}`,
    "",
  ].join("\n");
}
