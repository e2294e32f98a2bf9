/**
 * A replica's share of a limit while it decides from memory (fallback-store.ts): the limit
 * divided by the live replicas, rounded down, so the replicas together admit at most the limit;
 * and less, where what Redis last told this replica says the window has less left.
 */
import type { Decision, WindowLimit, WindowResult } from "./limiter.ts";
import type { Elsewhere, MemoryStore } from "./memory-store.ts";
import type { Clock } from "../../lib/clock.ts";

/**
 * Decisions from memory with this replica's share (counted there), less what Redis last said the
 * others admitted; undefined without a share (then nothing is admitted or counted).
 */
export function shareDecisions(opts: { memory: Pick<MemoryStore, "hit" | "elsewhere">; clock: Clock }) {
  const { memory, clock } = opts;
  const shareOf = replicaShares();
  return async (subject: string, windows: readonly WindowLimit[], replicas: number | undefined): Promise<Decision | undefined> => {
    const share = shareOf(windows, replicas);
    if (!share) return undefined;
    const elsewhere = memory.elsewhere(subject, windows);
    if (!elsewhere) return memory.hit(subject, share);
    const left = shareLeft(share, windows, elsewhere);
    if (left.some((n) => n < 1)) {
      // The others used the limit up, as far as this replica knows: refused until what they admitted stops counting.
      const until = Math.max(...elsewhere.filter((_, i) => left[i]! < 1).map((e) => e.untilMs));
      return refusal("limited", share, clock(), until);
    }
    const decision = await memory.hit(subject, share.map((w, i) => ({ ...w, limit: left[i]! })));
    for (const [i, w] of decision.windows.entries()) w.limit = share[i]!.limit; // the share is shown; what remains of it is less
    return decision;
  };
}

/**
 * Each replica's share of each window's limit, per windows array (callers reuse theirs) and
 * replica count, cached; undefined when some share is 0 or the count is unknown.
 */
function replicaShares(): (windows: readonly WindowLimit[], replicas: number | undefined) => WindowLimit[] | undefined {
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

/**
 * What this replica may count in memory, per window: its share, and no more than the limit less
 * what Redis last said other replicas admitted (`elsewhere`), since its own count, which the memory
 * store holds, comes on top of theirs. A number ≤ 0 where the others alone used the limit up.
 */
function shareLeft(share: readonly WindowLimit[], windows: readonly WindowLimit[], elsewhere: readonly Elsewhere[]): number[] {
  return share.map((s, i) => Math.min(s.limit, windows[i]!.limit - elsewhere[i]!.n));
}

/** Nothing admitted, nothing counted: `outcome` with Retry-After for `retryAtMs`; the windows show `shown`'s limits. */
export function refusal(outcome: "unavailable" | "limited", shown: readonly WindowLimit[], nowMs: number, retryAtMs: number): Decision {
  const results: WindowResult[] = shown.map((w) => ({
    windowSeconds: w.windowSeconds,
    limit: w.limit,
    remaining: 0,
    resetAt: Math.ceil(retryAtMs / 1000),
    releaseAtMs: retryAtMs,
    refused: true,
  }));
  return { outcome, windows: results, binding: 0, retryAfterSeconds: Math.ceil((retryAtMs - nowMs) / 1000), nowMs };
}
