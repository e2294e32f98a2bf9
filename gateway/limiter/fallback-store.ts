/**
 * Redis first, process memory when Redis is unavailable: the gateway keeps serving (no 5xx) and
 * keeps limiting while Redis is down, logs the outage once when it starts and once when it ends,
 * counts the faults, and goes back to Redis as soon as the client is ready again.
 *
 * While the client is not ready (disconnected, reconnecting) requests go straight to memory and
 * pay nothing. A failure while the client claims to be ready (a timeout: Redis slow or
 * partitioned) skips Redis for `probeIntervalMs` before trying again, so requests do not each pay
 * the command timeout.
 *
 * During an outage each replica limits on its own from an empty memory store, so the effective
 * limit is per replica until Redis returns; the Redis counters resume where they stood.
 */
import type { Counter, Gauge } from "prom-client";
import type { Logger } from "../../lib/logger.js";
import type { LimiterStore } from "./limiter.js";

export interface FallbackMetrics {
  /** Incremented on every failed Redis decision (and once when an outage is noticed from the client state). */
  faults: Pick<Counter, "inc">;
  /** 1 while deciding from memory, 0 otherwise. */
  fallbackActive: Pick<Gauge, "set">;
}

export interface FallbackStoreOptions {
  primary: LimiterStore;
  fallback: LimiterStore;
  logger: Logger;
  metrics?: FallbackMetrics;
  /** Whether the primary can take commands now (e.g. `() => isRedisReady(client)`); default always. */
  isPrimaryReady?: () => boolean;
  /** After a failure while "ready", how long to decide from memory before trying Redis again (default 1000 ms). */
  probeIntervalMs?: number;
  /** Time source for the probe interval (default Date.now). */
  clock?: () => number;
}

export interface FallbackStore extends LimiterStore {
  usingFallback(): boolean;
}

export function createFallbackStore(opts: FallbackStoreOptions): FallbackStore {
  const { primary, fallback, logger, metrics } = opts;
  const isPrimaryReady = opts.isPrimaryReady ?? (() => true);
  const probeIntervalMs = opts.probeIntervalMs ?? 1000;
  const clock = opts.clock ?? Date.now;
  let down = false;
  let skipUntil = 0;

  function fault(err: unknown): void {
    metrics?.faults.inc();
    if (down) return;
    down = true;
    metrics?.fallbackActive.set(1);
    logger.error({ err }, "redis unavailable, limiting from memory");
  }

  return {
    async hit(subject, windows) {
      if (!isPrimaryReady()) {
        if (!down) fault(new Error("redis client not ready"));
      } else if (clock() >= skipUntil) {
        try {
          const decision = await primary.hit(subject, windows);
          if (down) {
            down = false;
            metrics?.fallbackActive.set(0);
            logger.info("redis available again, limiting from redis");
          }
          return decision;
        } catch (err) {
          if (err instanceof RangeError) throw err; // invalid windows: a caller bug, not an outage
          fault(err);
          skipUntil = clock() + probeIntervalMs;
        }
      }
      return fallback.hit(subject, windows);
    },
    usingFallback: () => down,
    async close() {
      await Promise.allSettled([primary.close(), fallback.close()]);
    },
  };
}
