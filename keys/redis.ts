/**
 * How the keys tooling reaches Redis: one short-lived client per command, on any REDIS_URL form
 * the gateway accepts (single node, Sentinel, Cluster), with short timeouts, and what it writes
 * there: the copies of KEYS_DIR's record that every gateway replica reads on each request.
 */
import type { Cluster, Redis } from "ioredis";
import { createRedisClient, whenReady } from "../lib/redis-client.ts";
import { planOverride, type KeyChange } from "../lib/key-changes.ts";
import { KEY_RECORD_TTL_SECONDS, redisKey, subjectForKey } from "../lib/redis-keys.ts";

/** Runs `fn` with a connected client, then disconnects; throws the socket's error if Redis is not ready within 3 s. */
export async function withRedis<T>(redisUrl: string, fn: (client: Redis | Cluster) => Promise<T>): Promise<T> {
  // The socket's error says more than a bare timeout.
  let socketError: Error | undefined;
  const client = createRedisClient(redisUrl, {
    commandTimeoutMs: 2_000,
    connectTimeoutMs: 2_000,
    onError: (err) => (socketError ??= err),
  });
  try {
    if (!(await whenReady(client, 3_000))) throw socketError ?? new Error("not ready within 3 s");
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

/** SET rl:{key:<id>}:revoked 1 [EX ttl]: the limiter's script refuses the key on every replica. */
export async function setRevoked(client: Redis | Cluster, keyId: string, ttlSeconds: number | null): Promise<void> {
  const key = redisKey(subjectForKey(keyId), "revoked");
  if (ttlSeconds === null) await client.set(key, "1");
  else await client.set(key, "1", "EX", ttlSeconds);
}

/**
 * The key's record (rl:{key:<id>}:rec, see sliding-window.lua): the plan in force and the rolls,
 * as KEYS_DIR's change record has them. Last use (`lu`) is the gateways' and is kept.
 */
export async function publishKeyChange(client: Redis | Cluster, keyId: string, change: KeyChange): Promise<void> {
  const fields: Record<string, string> = {};
  const override = planOverride(change);
  if (override) Object.assign(fields, { p: override.plan, m: String(override.perMinute), d: String(override.perDay) });
  if (change.generation !== undefined) fields.g = String(change.generation);
  for (const [generation, until] of Object.entries(change.graceUntil ?? {})) fields[`r${generation}`] = String(until * 1000);
  if (Object.keys(fields).length === 0) return;
  const key = redisKey(subjectForKey(keyId), "rec");
  await client.multi().hset(key, fields).expire(key, KEY_RECORD_TTL_SECONDS).exec();
}
