/**
 * The gateway's limiter from its configuration: without REDIS_URL the memory store (one gateway);
 * with it the Redis store (shared by every replica, Redis TIME as the clock) behind the
 * fallback store, which limits from process memory, with this replica's share of each limit,
 * while Redis (or a Cluster node) is unavailable. The presence heartbeat tells it the share.
 */
import { Cluster, type Redis } from "ioredis";
import type { Logger } from "../../lib/logger.ts";
import { createRedisClient, isRedisReady, whenReady, type RedisClientOptions } from "../../lib/redis-client.ts";
import { subjectSlot } from "../../lib/redis-keys.ts";
import { createFallbackStore, type FallbackMetrics, type Outage } from "./fallback-store.ts";
import type { BanPolicy, LimiterStore } from "./limiter.ts";
import { createMemoryStore } from "./memory-store.ts";
import { startPresence, type PresenceOptions } from "./presence.ts";
import { createRedisStore } from "./redis-store.ts";
import { publishUsage } from "./usage-file.ts";
import type { Clock } from "../../lib/clock.ts";

export interface LimiterOptions {
  /** REDIS_URL; unset → in-memory limiter. */
  redisUrl?: string | undefined;
  ban: BanPolicy;
  /** Clock of the memory store(s); the Redis store uses Redis TIME. */
  clock: Clock;
  logger: Logger;
  metrics?: FallbackMetrics;
  /** LRU bound of the memory store(s) (default 100,000 subjects). */
  maxSubjects?: number;
  redis?: RedisClientOptions;
  /** Heartbeat settings (tests shorten them). */
  presence?: Pick<PresenceOptions, "intervalMs" | "ttlMs" | "id">;
  /** Without Redis: KEYS_DIR, where the API keys' usage is published for `keys usage` (usage-file.ts). */
  usageDir?: string;
  /** After a Redis node fails, how long its subjects are decided from memory before trying it again (default 1 s). */
  probeIntervalMs?: number;
}

export interface Limiter extends LimiterStore {
  readonly mode: "memory" | "redis";
  /** How much of the limiting comes from memory now ("none" without Redis). */
  outage(): Outage;
  /** The Redis nodes whose subjects are decided from memory now. */
  nodesInFallback(): string[];
  /** Live gateway replicas as the heartbeat last saw them (1 without Redis). */
  liveReplicas(): number | undefined;
  /** The Redis client when configured (e.g. for the gateway's status page). */
  readonly redis?: Redis | Cluster;
  /**
   * Resolves true once Redis takes commands and this replica has announced itself (at once
   * without Redis), false after `timeoutMs`. Awaited before serving.
   */
  ready(timeoutMs: number): Promise<boolean>;
}

export function createLimiter(opts: LimiterOptions): Limiter {
  const memory = () =>
    createMemoryStore({ ban: opts.ban, clock: opts.clock, ...(opts.maxSubjects ? { maxSubjects: opts.maxSubjects } : {}) });
  if (!opts.redisUrl) {
    const store = memory();
    const stopPublishing = opts.usageDir
      ? publishUsage({ store, keysDir: opts.usageDir, clock: opts.clock, logger: opts.logger })
      : () => {};
    const closeStore = store.close;
    return Object.assign(store, {
      mode: "memory" as const,
      outage: () => "none" as const,
      nodesInFallback: () => [],
      liveReplicas: () => 1,
      ready: async () => true,
      async close() {
        stopPublishing();
        await closeStore();
      },
    });
  }

  const redis = createRedisClient(opts.redisUrl, opts.redis);
  const store = createFallbackStore({
    primary: createRedisStore({ redis, ban: opts.ban }),
    fallback: memory(),
    logger: opts.logger,
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    isPrimaryReady: () => isRedisReady(redis),
    // On Cluster a subject belongs to the master of its slot, as the client last learned it.
    ...(redis instanceof Cluster
      ? {
          nodeOf: (subject: string) => redis.slots[subjectSlot(subject)]?.[0] ?? "unknown",
          isNode: (node: string) => redis.slots.some((owners) => owners?.[0] === node),
        }
      : {}),
    liveReplicas: () => presence.liveReplicas(),
    ...(opts.probeIntervalMs ? { probeIntervalMs: opts.probeIntervalMs } : {}),
  });
  // A heartbeat Redis answered ends an outage even when no request comes (an unready replica gets
  // none). On Cluster it also pings the nodes in fallback: one that failed a request and then gets
  // none (its keys idle) would otherwise stay there, and the metric and alert with it. A node that
  // does not answer, or that the client no longer connects to, may be one a failover replaced, in
  // a slot map no request has refreshed (ioredis refreshes it on errors and redirects only):
  // refresh it, so the store sees the node is gone.
  const onBeat =
    redis instanceof Cluster
      ? () => {
          store.primaryAnswered();
          for (const node of store.nodesInFallback()) {
            const client = redis.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === node);
            (client ? client.ping() : Promise.reject(new Error("no connection"))).then(
              () => store.nodeAnswered(node),
              () => redis.refreshSlotsCache(),
            );
          }
        }
      : store.primaryAnswered;
  const presence = startPresence({ redis, logger: opts.logger, ...opts.presence, onBeat });
  const closeStores = store.close;
  return Object.assign(store, {
    mode: "redis" as const,
    redis,
    liveReplicas: presence.liveReplicas,
    ready: async (timeoutMs: number) => (await whenReady(redis, timeoutMs)) && (await presence.beat()),
    async close() {
      await presence.close();
      await closeStores();
      await redis.quit().catch(() => redis.disconnect());
    },
  });
}
