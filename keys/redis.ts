/**
 * How the keys tooling reaches Redis: one short-lived client per command, on any REDIS_URL form
 * the gateway accepts (single node, Sentinel, Cluster), with short timeouts, and what it writes
 * there: each key's record as the limiter's one script reads it on every request.
 */
import type { Cluster, Redis } from "ioredis";
import type { KeyRecord } from "../lib/key-record.ts";
import { createRedisClient, whenReady } from "../lib/redis-client.ts";
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

/** A revoked key's Redis entry outlives its expiry by this much (then the token is refused as expired anyway). */
export const REVOKED_AFTER_EXPIRY_MS = 86_400_000;

/**
 * Publishes a key's record from the registry in one MULTI (one slot: every key shares the key's
 * hash tag): `rl:{key:<id>}:rec` gets p/m/d (plan and limits in force), g (generation), r<gen>
 * (each older generation's grace end, ms), s (scopes), c (allowed CIDRs, "" = anywhere) and x
 * (expiry ms, "" = never); `lu` (last use) is the gateways' and is never written here. A revoked
 * key also gets `rl:{key:<id>}:revoked` = 1 until a day after its expiry (or for ever).
 * Idempotent: the key service's follower and the command line may both publish a change.
 */
export async function publishKeyRecord(client: Redis | Cluster, record: KeyRecord): Promise<void> {
  const subject = subjectForKey(record.id);
  const rec = redisKey(subject, "rec");
  const fields: Record<string, string> = {
    p: record.plan,
    m: String(record.limits.perMinute),
    d: String(record.limits.perDay),
    g: String(record.generation),
    s: record.scopes.join(" "),
    c: record.allowedCidrs.join(" "),
    x: record.expiresAt === null ? "" : String(record.expiresAt),
  };
  for (const [generation, until] of Object.entries(record.graceUntil)) fields[`r${generation}`] = String(until);
  const multi = client.multi().hset(rec, fields).expire(rec, KEY_RECORD_TTL_SECONDS);
  if (record.revokedAt !== null) {
    const revoked = redisKey(subject, "revoked");
    multi.set(revoked, "1");
    if (record.expiresAt !== null) multi.pexpireat(revoked, record.expiresAt + REVOKED_AFTER_EXPIRY_MS);
  }
  const results = await multi.exec();
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}
