import type { KeyClaims } from "../lib/api-key-format.ts";
import { planOverride } from "../lib/key-changes.ts";
import { liveIssuedKey, publishOrExplain, updateChange } from "./changes.ts";
import { signKey } from "./issue.ts";
import { publishKeyChange, withRedis } from "./redis.ts";

export interface RollOptions {
  /** How long the key it replaces keeps working, in seconds (0: it stops at once). Default 24 h. */
  graceSeconds?: number;
  /** When set, the key's Redis record is updated too (every replica ends the old key on time). */
  redisUrl?: string;
  /** Milliseconds since the epoch; defaults to now. */
  now?: number;
}

export interface RollResult {
  /** The new key (a token): same key id, name, plan and counts. */
  key: string;
  keyId: string;
  /** The new key's generation (1 for the first roll). */
  generation: number;
  /** Unix seconds at which the keys it replaces stop working. */
  graceUntil: number;
  redis: boolean;
  /** REDIS_URL was set but Redis could not be updated: what to do (the roll stands in KEYS_DIR). */
  redisError?: string;
}

export const DEFAULT_GRACE_SECONDS = 86_400;

/**
 * Replaces a key with a new one of the same key id (so the same name, plan in force, expiry and
 * counts): the older keys keep working until the grace period ends, then get 401 on every
 * gateway. Throws KeysError for a key never issued, revoked or expired (nothing changed).
 */
export async function rollKey(keysDir: string, keyOrId: string, opts: RollOptions = {}): Promise<RollResult> {
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  const issued = liveIssuedKey(keysDir, keyOrId, nowSeconds);
  const graceUntil = nowSeconds + (opts.graceSeconds ?? DEFAULT_GRACE_SECONDS);
  let token = "";
  // Signed under the record's lock, so two rolls never hand out the same generation; a roll that
  // cannot sign (no signing pair) changes nothing.
  const change = updateChange(keysDir, issued.keyId, (current) => {
    const generation = (current.generation ?? 0) + 1;
    const inForce = planOverride(current) ?? issued;
    const claims: KeyClaims = { sub: issued.keyId, plan: inForce.plan, gen: generation };
    if (inForce.plan === "enterprise") claims.lim = { m: inForce.perMinute!, d: inForce.perDay! };
    token = signKey(keysDir, claims, nowSeconds, issued.expiresAt).token;
    return { ...current, generation, graceUntil: { ...current.graceUntil, [generation - 1]: graceUntil }, rolledAt: nowSeconds };
  });
  const generation = change.generation!;
  // The new key is never lost: a Redis that cannot be reached is reported beside it.
  let redis = false;
  let redisError: string | undefined;
  try {
    redis = await publishOrExplain(keysDir, opts.redisUrl, (url) => withRedis(url, (client) => publishKeyChange(client, issued.keyId, change)));
  } catch (err) {
    redisError = (err as Error).message;
  }
  return { key: token, keyId: issued.keyId, generation, graceUntil, redis, ...(redisError ? { redisError } : {}) };
}
