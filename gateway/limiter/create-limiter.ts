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
import { createFallbackStore, DEFAULT_PROBE_INTERVAL_MS, type FallbackMetrics, type Outage } from "./fallback-store.ts";
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
  /** After a Redis node fails, how long its subjects are decided from memory before trying it again (default 250 ms). */
  probeIntervalMs?: number;
}

export interface Limiter extends LimiterStore {
  readonly mode: "memory" | "redis";
  /** How much of the limiting comes from memory now ("none" without Redis). */
  outage(): Outage;
  /** The Redis nodes whose subjects are decided from memory now. */
  nodesInFallback(): string[];
  /** How much of Redis left its last decision unanswered in time ("none" without Redis). */
  late(): Outage;
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
      late: () => "none" as const,
      liveReplicas: () => 1,
      ready: async () => true,
      async close() {
        stopPublishing();
        await closeStore();
      },
    });
  }

  const redis = createRedisClient(opts.redisUrl, opts.redis);
  /** A Cluster master's own client, by "host:port". */
  const master = (node: string) =>
    redis instanceof Cluster ? redis.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === node) : undefined;
  const probeIntervalMs = opts.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
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
          isNodeReady: (node: string) => master(node)?.status === "ready",
        }
      : {}),
    liveReplicas: () => presence.liveReplicas(),
    probeIntervalMs,
    ...(opts.maxSubjects ? { maxSubjects: opts.maxSubjects } : {}),
  });
  // The client's own word ends an outage as soon as it is ready again (the reconnect backoff is
  // capped at 200 ms), folding what memory admitted, and starts one as its connection drops, so
  // that a replica no request reached during the outage still holds back after it. A heartbeat
  // Redis answered ends one too, even when no request comes (an unready replica gets none).
  const answered = () => void store.primaryAnswered();
  redis.on("ready", answered);
  redis.on("close", store.primaryLost);
  // The nodes in fallback are pinged every probe interval: one that failed a request and then gets
  // none it may take (its keys idle, or refused by their share while leaving the outage) would
  // otherwise stay there, and the metric and alert with it. On Cluster a node that does not
  // answer, or that the client no longer connects to, may be one a failover replaced, in a slot
  // map no request has refreshed (ioredis refreshes it on errors and redirects only): refresh it,
  // so the store sees at once that the node is gone. A late Cluster node is pinged too (an
  // unsharded Redis's lateness ends with the heartbeat).
  const probe = setInterval(() => {
    const nodes = store.nodesInFallback();
    if (!(redis instanceof Cluster)) {
      if (nodes.length > 0) redis.ping().then(answered, () => {});
      return;
    }
    for (const node of new Set([...nodes, ...store.nodesLate()])) {
      const client = master(node);
      (client ? client.ping() : Promise.reject(new Error("no connection"))).then(
        () => store.nodeAnswered(node),
        () => redis.refreshSlotsCache(),
      );
    }
  }, probeIntervalMs).unref();
  if (redis instanceof Cluster) redis.on("refresh", () => void store.nodesChanged());
  const presence = startPresence({ redis, logger: opts.logger, ...opts.presence, onBeat: answered });
  const closeStores = store.close;
  return Object.assign(store, {
    mode: "redis" as const,
    redis,
    liveReplicas: presence.liveReplicas,
    ready: async (timeoutMs: number) => (await whenReady(redis, timeoutMs)) && (await presence.beat()),
    async close() {
      clearInterval(probe);
      redis.off("close", store.primaryLost); // quitting is no outage
      await presence.close();
      await closeStores();
      await redis.quit().catch(() => redis.disconnect());
    },
  });
}
