/**
 * A replica's share of a limit while it decides from memory (fallback-store.ts): the limit
 * divided by the live replicas, rounded down, so the replicas together admit at most the limit.
 */
import type { Decision, WindowLimit, WindowResult } from "./limiter.ts";

/**
 * Each replica's share of each window's limit, per windows array (callers reuse theirs) and
 * replica count, cached; undefined when some share is 0 or the count is unknown.
 */
export function replicaShares(): (windows: readonly WindowLimit[], replicas: number | undefined) => WindowLimit[] | undefined {
  const shares = new WeakMap<readonly WindowLimit[], { replicas: number; windows: WindowLimit[] | undefined }>();
  return (windows, replicas) => {
    if (replicas === undefined) return undefined;
    let cached = shares.get(windows);
    if (cached?.replicas !== replicas) {
      const share = windows.map((w) => ({ ...w, limit: shareLimit(w.limit, replicas) }));
      cached = { replicas, windows: share.every((w) => w.limit >= 1) ? share : undefined };
      shares.set(windows, cached);
    }
    return cached.windows;
  };
}

/** One replica's share of a limit: rounded down, so the shares add up to at most the limit; 0 while the count is unknown. */
export function shareLimit(limit: number, replicas: number | undefined): number {
  return replicas === undefined ? 0 : Math.floor(limit / Math.max(1, replicas));
}

/** Nothing admitted, nothing counted: "retry in a moment", when Redis may be back. */
export function unavailable(windows: readonly WindowLimit[], replicas: number | undefined, nowMs: number, retryMs: number): Decision {
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
