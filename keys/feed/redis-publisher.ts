import type { Cluster, Redis } from "ioredis";
import { JWKS_REDIS_KEY, jwksOf } from "../../lib/jwks.ts";
import { KEY_EVENT_TYPES, type KeyEvent } from "../../lib/key-record.ts";
import type { Logger } from "../../lib/logger.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { publishKeyRecord } from "../redis.ts";

/** The last seq whose key records are in Redis: a restart (or another replica) republishes only what is newer. */
export const SEQ_REDIS_KEY = "rl:{keys}:seq";

/** Raises the stored seq, never lowers it (replicas publish concurrently). */
const RAISE_SEQ = `local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cur then redis.call('SET', KEYS[1], ARGV[1]) end
return 0`;

const KEY_EVENTS: ReadonlySet<string> = new Set(KEY_EVENT_TYPES);

export interface RedisPublisher {
  /** The seq Redis holds records up to (read at start). */
  publishedSeq(): Promise<number>;
  /** Publishes the current record of every key these events touched, then raises the seq; throws when Redis fails (the caller retries). */
  publish(events: readonly KeyEvent[]): Promise<void>;
  /** Writes the JWKS when it changed since the last write (or `always`). */
  publishJwks(always: boolean): Promise<void>;
}

/**
 * With REDIS_URL, the key service keeps every key's Redis record (rl:{key:<id>}:rec and :revoked,
 * written by keys/redis.ts publishKeyRecord) current with the registry, and the JWKS beside them,
 * so a request still costs the gateway one Redis round trip and a gateway that starts while the
 * key service is down still verifies keys. A key's current record is published, not the event's
 * changes: publishing is idempotent and a late replica cannot write an older state over a newer one.
 */
export function createRedisPublisher(deps: { client: Redis | Cluster; registry: KeyRegistry; keysDir: string; logger: Logger }): RedisPublisher {
  const { client, registry, keysDir } = deps;
  let lastJwks: string | undefined;
  return {
    async publishedSeq() {
      return Number((await client.get(SEQ_REDIS_KEY)) ?? 0);
    },
    async publish(events) {
      const keyIds = new Set(events.filter((e) => KEY_EVENTS.has(e.type) && e.keyId !== null).map((e) => e.keyId!));
      for (const id of keyIds) {
        const record = await registry.getKey(id);
        if (record) await publishKeyRecord(client, record);
      }
      if (events.length > 0) await client.eval(RAISE_SEQ, 1, SEQ_REDIS_KEY, String(events.at(-1)!.seq));
    },
    async publishJwks(always) {
      const jwks = JSON.stringify(jwksOf(keysDir));
      if (jwks === lastJwks && !always) return;
      await client.set(JWKS_REDIS_KEY, jwks);
      lastJwks = jwks;
    },
  };
}
