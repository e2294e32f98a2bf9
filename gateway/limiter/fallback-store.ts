/**
 * Redis first, process memory when Redis is unavailable: the gateway keeps serving and keeps
 * limiting while Redis (or one node of a Redis Cluster) is down, logs each outage once when it
 * starts and once when it ends, counts the faults, and goes back to Redis as soon as it answers.
 *
 * A fault is the fault of one node. On Redis Cluster `nodeOf` names the master holding a
 * subject's slot: a failure marks that node, and only subjects on a marked node are decided from
 * memory; the others stay in Redis. A failure while the client claims to be ready (a timeout:
 * the node slow, partitioned or failing over) skips that node for `probeIntervalMs` before its
 * next subject tries it again, so requests do not each pay the command timeout. While the client
 * as a whole is not ready (disconnected, reconnecting) every decision comes from memory at once.
 * A failover replaces a node rather than healing it: once `isNode` says a failed node holds no
 * slots any more, its outage is over (its subjects already go to the new master).
 *
 * Never over-admitting: from memory a replica admits only its share of each limit, the limit
 * divided by the live replicas (presence.ts; rounded down), so the replicas together admit at
 * most the limit in any window that lies within the outage. Every request Redis admitted is
 * also recorded in memory, so what this replica admitted just before the outage counts against
 * its share. A share of 0 (a limit smaller than the number of replicas), or a replica count not
 * yet known, admits nothing: the decision is "unavailable" (503 with Retry-After), not a 429
 * the client earned. README (Reliability) says what this does and does not cover.
 */
import type { Counter, Gauge } from "prom-client";
import type { Logger } from "../../lib/logger.ts";
import type { Decision, LimiterStore, WindowLimit, WindowResult } from "./limiter.ts";
import type { MemoryStore } from "./memory-store.ts";
import { systemClock, type Clock } from "../../lib/clock.ts";

export interface FallbackMetrics {
  /** Incremented on every failed Redis decision (and once when an outage is noticed from the client state). */
  faults: Pick<Counter, "inc">;
  /** 1 while any decision comes from memory, 0 otherwise. */
  fallbackActive: Pick<Gauge, "set">;
}

export interface FallbackStoreOptions {
  primary: LimiterStore;
  fallback: Pick<MemoryStore, "hit" | "record" | "close">;
  logger: Logger;
  metrics?: FallbackMetrics;
  /** Whether the primary can take commands now (e.g. `() => isRedisReady(client)`); default always. */
  isPrimaryReady?: () => boolean;
  /** The Redis node holding a subject's keys (Cluster: its slot's master). Default: one node for all. */
  nodeOf?: (subject: string) => string;
  /** Whether a node still holds slots (Cluster: the client's slot map). Default: always. */
  isNode?: (node: string) => boolean;
  /** Live gateway replicas (presence.ts), undefined while unknown. Default 1: a lone gateway. */
  liveReplicas?: () => number | undefined;
  /** After a node fails, how long its subjects are decided from memory before it is tried again (default 1000 ms). */
  probeIntervalMs?: number;
  /** Time source for the probe interval and "unavailable" decisions (default the system clock). */
  clock?: Clock;
}

/** "full": every decision comes from memory; "partial": some Cluster nodes' subjects do. */
export type Outage = "none" | "partial" | "full";

export interface FallbackStore extends LimiterStore {
  outage(): Outage;
  /** The nodes whose subjects are decided from memory now. */
  nodesInFallback(): string[];
  /**
   * Redis answered a command outside `hit` (the presence heartbeat): an outage of the whole client,
   * or of the one node of an unsharded Redis, is over. Without it only a request ended an outage,
   * and a replica that /readyz took out of rotation got none: it stayed unready after Redis returned.
   */
  primaryAnswered(): void;
  /** One Cluster node answered a command outside `hit` (a ping): its outage is over. */
  nodeAnswered(node: string): void;
}

const ONE_NODE = "redis";
/** The client as a whole is not ready: every subject is decided from memory. */
const ALL = "all";

export function createFallbackStore(opts: FallbackStoreOptions): FallbackStore {
  const { primary, fallback, logger, metrics } = opts;
  const isPrimaryReady = opts.isPrimaryReady ?? (() => true);
  const sharded = opts.nodeOf !== undefined;
  const nodeOf = opts.nodeOf ?? (() => ONE_NODE);
  const isNode = opts.isNode ?? (() => true);
  const liveReplicas = opts.liveReplicas ?? (() => 1);
  const probeIntervalMs = opts.probeIntervalMs ?? 1000;
  const clock = opts.clock ?? systemClock;
  /** Nodes in fallback (ALL: the whole client) → the instant their subjects may try Redis again. */
  const down = new Map<string, number>();
  /** Nodes whose outage was logged (and whose return will be). */
  const announced = new Set<string>();

  // A client that is not ready is a full outage even before a request has noticed it (readiness asks).
  const outage = (): Outage => {
    forgetReplaced();
    return !isPrimaryReady() || down.has(ALL) || (!sharded && down.size > 0) ? "full" : down.size > 0 ? "partial" : "none";
  };

  // A failed master that a failover replaced never answers again, so no decision would end its
  // outage: it is dropped once the slot map no longer has it (looked at once per probe interval).
  let nextSweepAt = 0;
  function forgetReplaced(): void {
    if (!sharded || down.size === 0 || clock() < nextSweepAt) return;
    nextSweepAt = clock() + probeIntervalMs;
    for (const node of down.keys()) if (node !== ALL && !isNode(node)) recovered(node, "redis node replaced by a failover, limiting from redis");
  }

  /** A failed decision (counted), or the client found not ready (counted once, unless already in an outage). */
  function markDown(node: string, retryAt: number, err: unknown): void {
    const quiet = node === ALL && down.size > 0; // already limiting from memory, already logged
    if (down.has(node)) {
      if (node !== ALL) metrics?.faults.inc();
      down.set(node, retryAt);
      return;
    }
    down.set(node, retryAt);
    if (quiet) return;
    metrics?.faults.inc();
    metrics?.fallbackActive.set(1);
    announced.add(node);
    logger.error({ err, node }, "redis unavailable, limiting from memory");
  }

  function recovered(node: string, msg = "redis available again, limiting from redis"): void {
    if (!down.delete(node)) return;
    if (down.size === 0) metrics?.fallbackActive.set(0);
    if (announced.delete(node)) logger.info({ node }, msg);
  }

  // Each replica's share of each window's limit, per windows array (callers reuse theirs) and
  // replica count; undefined when some share is 0 or the count is unknown.
  const shares = new WeakMap<readonly WindowLimit[], { replicas: number; windows: WindowLimit[] | undefined }>();
  function shareOf(windows: readonly WindowLimit[], replicas: number | undefined): WindowLimit[] | undefined {
    if (replicas === undefined) return undefined;
    let cached = shares.get(windows);
    if (cached?.replicas !== replicas) {
      const share = windows.map((w) => ({ ...w, limit: shareLimit(w.limit, replicas) }));
      cached = { replicas, windows: share.every((w) => w.limit >= 1) ? share : undefined };
      shares.set(windows, cached);
    }
    return cached.windows;
  }

  function fromMemory(subject: string, windows: readonly WindowLimit[]): Promise<Decision> {
    const replicas = liveReplicas();
    const share = shareOf(windows, replicas);
    return share ? fallback.hit(subject, share) : Promise.resolve(unavailable(windows, replicas, clock(), probeIntervalMs));
  }

  return {
    async hit(subject, windows, key) {
      if (!isPrimaryReady()) {
        if (!down.has(ALL)) markDown(ALL, 0, new Error("redis client not ready"));
        return fromMemory(subject, windows);
      }
      // Only while some node is down is a subject's node worth looking up.
      const node = down.size > 0 ? nodeOf(subject) : undefined;
      if (node !== undefined && clock() < (down.get(node) ?? 0)) return fromMemory(subject, windows);
      try {
        const decision = await primary.hit(subject, windows, key);
        if (node !== undefined) {
          recovered(ALL);
          recovered(node);
          forgetReplaced();
        }
        if (decision.outcome === "admitted") fallback.record(subject, windows);
        return decision;
      } catch (err) {
        if (err instanceof RangeError) throw err; // invalid windows: a caller bug, not an outage
        markDown(node ?? nodeOf(subject), clock() + probeIntervalMs, err);
        return fromMemory(subject, windows);
      }
    },
    outage,
    nodesInFallback: () => {
      forgetReplaced();
      return [...down.keys()];
    },
    primaryAnswered() {
      if (down.size === 0 || !isPrimaryReady()) return;
      recovered(ALL);
      if (!sharded) recovered(ONE_NODE);
    },
    nodeAnswered: (node) => recovered(node),
    async close() {
      await Promise.allSettled([primary.close(), fallback.close()]);
    },
  };
}

/** One replica's share of a limit: rounded down, so the shares add up to at most the limit; 0 while the count is unknown. */
function shareLimit(limit: number, replicas: number | undefined): number {
  return replicas === undefined ? 0 : Math.floor(limit / Math.max(1, replicas));
}

/** Nothing admitted, nothing counted: "retry in a moment", when Redis may be back. */
function unavailable(windows: readonly WindowLimit[], replicas: number | undefined, nowMs: number, retryMs: number): Decision {
  const results: WindowResult[] = windows.map((w) => ({
    windowSeconds: w.windowSeconds,
    limit: shareLimit(w.limit, replicas),
    remaining: 0,
    resetAt: Math.ceil((nowMs + retryMs) / 1000),
    releaseAtMs: nowMs + retryMs,
    refused: true,
  }));
  return { outcome: "unavailable", windows: results, binding: 0, retryAfterSeconds: Math.ceil(retryMs / 1000), nowMs };
}
