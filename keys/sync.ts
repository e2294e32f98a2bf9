import { KeysError } from "./errors.ts";
import { publishKeyRecord, withRedis } from "./redis.ts";
import type { KeyRegistry } from "./registry/store.ts";
import { allKeys } from "./resolve.ts";

export interface SyncResult {
  keys: number;
  revoked: number;
}

/**
 * Publishes every key's record from the registry to Redis again (publishKeyRecord): for a Redis
 * that lost its data, or changes made while it was unreachable.
 */
export async function syncKeys(registry: KeyRegistry, opts: { redisUrl: string; now: number }): Promise<SyncResult> {
  const keys = await allKeys(registry, opts.now);
  await withRedis(opts.redisUrl, async (client) => {
    for (const record of keys) await publishKeyRecord(client, record);
  }).catch((err: Error) => {
    throw new KeysError(`Redis could not be updated (${err.message}); nothing is lost: the registry holds every key, run sync again`);
  });
  return { keys: keys.length, revoked: keys.filter((k) => k.revokedAt !== null).length };
}
