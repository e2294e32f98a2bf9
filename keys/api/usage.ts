import type { Clock } from "../../lib/clock.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { isoOrNull, type KeyRecord } from "../../lib/key-record.ts";
import { readUsageFile } from "../../lib/key-usage.ts";
import { countedAt } from "../../lib/window-buckets.ts";
import { readRedisUsage, type KeyUsage } from "../usage.ts";
import { withRedis } from "../redis.ts";

/**
 * GET /v1/keys/{id}/usage, as `keys usage --json`: the plan and limits in force from the registry,
 * what was used from the limiter's store (Redis with REDIS_URL; else what a gateway without Redis
 * published to KEYS_DIR/usage.json; else nothing used), last use from there or the registry.
 */
export function usageReader(deps: { keysDir: string; redisUrl?: string | undefined; clock: Clock }): (record: KeyRecord) => Promise<KeyUsage> {
  return async (record) => {
    let used: { nowMs: number; minute: number; day: number; bannedUntilMs: number; lastUsedMs: number | null };
    if (deps.redisUrl) {
      used = await withRedis(deps.redisUrl, (client) => readRedisUsage(client, record.id)).catch(() => {
        throw Object.assign(new ApiError("service_unavailable", "The limiter's Redis cannot be read now; retry later."), { retryAfterSeconds: 1 });
      });
    } else {
      const nowMs = deps.clock();
      let entry;
      try {
        entry = readUsageFile(deps.keysDir)?.keys[record.id];
      } catch {
        entry = undefined; // a file no gateway wrote: nothing known
      }
      used = {
        nowMs,
        minute: countedAt(entry?.windows["60"] ?? [], 60, nowMs),
        day: countedAt(entry?.windows["86400"] ?? [], 86_400, nowMs),
        bannedUntilMs: entry?.bannedUntil ?? 0,
        lastUsedMs: entry?.lastUsedAt ?? null,
      };
    }
    const { perMinute, perDay } = record.limits;
    const banned = used.bannedUntilMs > used.nowMs;
    return {
      keyId: record.id,
      plan: record.plan,
      limits: { perMinute, perDay },
      used: { minute: used.minute, day: used.day },
      remaining: { minute: Math.max(0, perMinute - used.minute), day: Math.max(0, perDay - used.day) },
      banned,
      bannedUntil: banned ? isoOrNull(used.bannedUntilMs) : null,
      lastUsedAt: isoOrNull(Math.max(used.lastUsedMs ?? 0, record.lastUsedAt ?? 0) || null),
    };
  };
}
