import type { Cluster, Redis } from "ioredis";
import type { PlanName } from "../lib/api-key-format.ts";
import { isoOrNull, type KeyRecord } from "../lib/key-record.ts";
import { readUsageFile, usageFilePath } from "../lib/key-usage.ts";
import { redisKey, subjectForKey } from "../lib/redis-keys.ts";
import { countedAt } from "../lib/window-buckets.ts";
import { KeysError } from "./errors.ts";
import { withRedis } from "./redis.ts";

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
}

/**
 * A key's usage against the plan in force (the registry's record): from Redis with `redisUrl`,
 * else from what a gateway without Redis published to KEYS_DIR/usage.json (nothing used when it
 * published nothing); last use from the store, else the registry's. Throws KeysError for an
 * unreachable Redis or a corrupt usage file.
 */
export async function keyUsage(record: KeyRecord, keysDir: string, opts: UsageOptions = {}): Promise<KeyUsage> {
  const nowMs = opts.now ?? Date.now();
  const stored = opts.redisUrl
    ? await withRedis(opts.redisUrl, (client) => readRedisUsage(client, record.id)).catch((err: Error) => {
        throw new KeysError(`cannot read usage from Redis (${err.message})`);
      })
    : readPublishedUsage(keysDir, record.id, nowMs);
  return usageReport(record, { ...stored, lastUsedMs: stored.lastUsedMs ?? record.lastUsedAt });
}

function usageReport(record: KeyRecord, s: StoredUsage): KeyUsage {
  const { limits } = record;
  const banned = s.bannedUntilMs > s.nowMs;
  return {
    keyId: record.id,
    plan: record.plan,
    limits: { perMinute: limits.perMinute, perDay: limits.perDay },
    used: { minute: s.minute, day: s.day },
    remaining: { minute: Math.max(0, limits.perMinute - s.minute), day: Math.max(0, limits.perDay - s.day) },
    banned,
    bannedUntil: banned ? isoOrNull(s.bannedUntilMs) : null,
    lastUsedAt: isoOrNull(s.lastUsedMs),
  };
}

/** The limiter's own keys (one slot: they share the key's hash tag) at Redis TIME. */
export async function readRedisUsage(client: Redis | Cluster, keyId: string): Promise<StoredUsage> {
  const subject = subjectForKey(keyId);
  const [[seconds, micros], minute, day, ban, lu] = await Promise.all([
    client.time(),
    client.hgetall(redisKey(subject, "m")),
    client.hgetall(redisKey(subject, "d")),
    client.get(redisKey(subject, "ban")),
    client.hget(redisKey(subject, "rec"), "lu"),
  ]);
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const buckets = (hash: Record<string, string>) =>
    Object.entries(hash).flatMap(([field, count]) => (/^\d+$/.test(field) ? [[Number(field), Number(count)] as const] : []));
  return {
    nowMs,
    minute: countedAt(buckets(minute), 60, nowMs),
    day: countedAt(buckets(day), 86_400, nowMs),
    bannedUntilMs: Number(ban ?? 0),
    lastUsedMs: lu ? Number(lu) : null,
  };
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
