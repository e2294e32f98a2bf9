/**
 * Gateway replicas announce themselves in Redis, so that each knows how many replicas are live
 * when Redis becomes unreachable and it must limit from memory with its share of each limit
 * (fallback-store.ts). Every `intervalMs` a replica runs one script: add itself to a sorted set
 * scored by Redis TIME, drop members silent for `ttlMs`, and read the count. While Redis is
 * unreachable the last count stands. A replica that stops cleanly removes itself at once.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../../lib/logger.ts";
import { PRESENCE_KEY } from "../../lib/redis-keys.ts";

const COMMAND = "petStorePresence";
const HEARTBEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl)
return redis.call('ZCARD', KEYS[1])
`;

export interface PresenceOptions {
  redis: Redis | Cluster;
  logger: Logger;
  /** This replica's id (default: host, pid and a random suffix). */
  id?: string;
  /** Heartbeat period (default 1,000 ms). */
  intervalMs?: number;
  /** A replica not heard from for this long is no longer counted (default 3 × intervalMs). */
  ttlMs?: number;
  /** Called after each heartbeat Redis answered. */
  onBeat?: () => void;
}

export interface Presence {
  /** Live replicas at the last successful heartbeat (this one included); undefined before the first. */
  liveReplicas(): number | undefined;
  /** One heartbeat now; resolves false when Redis did not answer. */
  beat(): Promise<boolean>;
  /** Stops the heartbeat and removes this replica from the set (best effort). */
  close(): Promise<void>;
}

type PresenceCommand = Record<typeof COMMAND, (key: string, id: string, ttlMs: number) => Promise<number>>;

export const newReplicaId = (): string => `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;

export function startPresence(opts: PresenceOptions): Presence {
  const { redis, logger } = opts;
  const id = opts.id ?? newReplicaId();
  const intervalMs = opts.intervalMs ?? 1_000;
  const ttlMs = opts.ttlMs ?? 3 * intervalMs;
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: HEARTBEAT_LUA });
  const client = redis as unknown as PresenceCommand;
  let live: number | undefined;

  const beat = async (): Promise<boolean> => {
    try {
      const count = Number(await client[COMMAND](PRESENCE_KEY, id, ttlMs));
      if (count !== live) logger.info({ replicas: count }, "live gateway replicas");
      live = count;
      opts.onBeat?.();
      return true;
    } catch {
      return false; // Redis unreachable: the fallback store logs the outage; the last count stands
    }
  };
  const timer = setInterval(() => void beat(), intervalMs);
  timer.unref();
  void beat();

  return {
    liveReplicas: () => live,
    beat,
    async close() {
      clearInterval(timer);
      await redis.zrem(PRESENCE_KEY, id).catch(() => {});
    },
  };
}
