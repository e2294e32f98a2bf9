/**
 * The gateway's limiter from its configuration: without REDIS_URL the memory store (one gateway);
 * with it the Redis store (shared by every replica, Redis TIME as the clock) behind the
 * fallback store, which limits from process memory while Redis is unavailable.
 */
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../../lib/logger.js";
import { createFallbackStore, type FallbackMetrics } from "./fallback-store.js";
import type { BanPolicy, Clock, LimiterStore } from "./limiter.js";
import { createMemoryStore } from "./memory-store.js";
import { createRedisClient, isRedisReady, whenReady, type RedisClientOptions } from "../../lib/redis-client.js";
import { createRedisStore } from "./redis-store.js";

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
}

export interface Limiter extends LimiterStore {
  readonly mode: "memory" | "redis";
  /** True while Redis is configured but unavailable and decisions come from memory. */
  usingFallback(): boolean;
  /** The Redis client when configured (e.g. for the gateway's status page). */
  readonly redis?: Redis | Cluster;
  /**
   * Resolves true once Redis takes commands (at once without Redis), false after `timeoutMs`.
   * Awaited before serving: until the first connection is up, decisions would come from memory.
   */
  ready(timeoutMs: number): Promise<boolean>;
}

export function createLimiter(opts: LimiterOptions): Limiter {
  const memory = () =>
    createMemoryStore({ ban: opts.ban, clock: opts.clock, ...(opts.maxSubjects ? { maxSubjects: opts.maxSubjects } : {}) });
  if (!opts.redisUrl) {
    return Object.assign(memory(), { mode: "memory" as const, usingFallback: () => false, ready: async () => true });
  }

  const redis = createRedisClient(opts.redisUrl, opts.redis);
  const store = createFallbackStore({
    primary: createRedisStore({ redis, ban: opts.ban, closeClient: true }),
    fallback: memory(),
    logger: opts.logger,
    ...(opts.metrics ? { metrics: opts.metrics } : {}),
    isPrimaryReady: () => isRedisReady(redis),
  });
  return Object.assign(store, { mode: "redis" as const, redis, ready: (timeoutMs: number) => whenReady(redis, timeoutMs) });
}
