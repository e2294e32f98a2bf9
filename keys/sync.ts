import { readChanges } from "./changes.ts";
import { readRevoked } from "./registry.ts";
import { publishKeyChange, setRevoked, withRedis } from "./redis.ts";
import { KeysError } from "./errors.ts";
import { REDIS_TTL_MARGIN_SECONDS } from "./revoke.ts";

export interface SyncResult {
  revocations: number;
  changes: number;
}

/**
 * Publishes KEYS_DIR's record to Redis again: every revocation and every key's change (plan in
 * force, rolls). For a Redis that lost its data, or changes made while it was unreachable.
 */
export async function syncKeys(keysDir: string, opts: { redisUrl: string; now?: number }): Promise<SyncResult> {
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  const revoked = Object.entries(readRevoked(keysDir).revoked).filter(
    ([, e]) => e.expiresAt === null || e.expiresAt + REDIS_TTL_MARGIN_SECONDS > nowSeconds,
  );
  const changes = Object.entries(readChanges(keysDir).keys);
  await withRedis(opts.redisUrl, async (client) => {
    for (const [keyId, e] of revoked) {
      await setRevoked(client, keyId, e.expiresAt === null ? null : e.expiresAt - nowSeconds + REDIS_TTL_MARGIN_SECONDS);
    }
    for (const [keyId, change] of changes) await publishKeyChange(client, keyId, change);
  }).catch((err: Error) => {
    throw new KeysError(`Redis could not be updated (${err.message}); nothing is lost: KEYS_DIR holds the record, run sync again`);
  });
  return { revocations: revoked.length, changes: changes.length };
}
