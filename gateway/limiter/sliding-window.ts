/**
 * The limiter's pure math, shared by the memory store (which runs it) and the Redis store
 * (whose Lua script, sliding-window.lua, re-expresses it over a Redis hash: running total,
 * oldest/newest bucket and linked buckets; the conformance and property suites hold the two to
 * identical decisions).
 *
 * A window of W ms is split into buckets of b = ceil(W / 60) ms (1 s for the minute, 24 min for
 * the day); bucket i covers [i·b, (i+1)·b) of the epoch. At time t the window counts every bucket
 * that overlaps the rolling window (t − W, t], the oldest one in full, so it never admits more
 * than the limit in any rolling window and holds at most 61 buckets whatever the limit. Bucket i
 * stops counting at its expiry (i+1)·b + W.
 */
import type { PlanName } from "../../lib/api-key-format.ts";
import { bucketExpiry, bucketMsFor, firstCountedBucket } from "../../lib/window-buckets.ts";
import type { BanPolicy, Decision, Outcome, WindowLimit, WindowResult } from "./limiter.ts";

/** Escalated bans never exceed a day. */
export const MAX_BAN_SECONDS = 86_400;
/** Offences are remembered this long after a ban ends; a new ban within it escalates. */
export const OFFENCE_MEMORY_MS = 86_400_000;

export const OUTCOME_CODES: readonly Outcome[] = ["admitted", "limited", "banned", "revoked", "rolled"];

/** Length of the ban for the n-th offence (1-based): seconds × 2^(n−1), capped at a day. */
export const banLengthMs = (policy: BanPolicy, offences: number): number =>
  Math.min(policy.seconds * 2 ** (offences - 1), MAX_BAN_SECONDS) * 1000;

/** Rejects windows the algorithm cannot honour; both stores call it before deciding. */
export function validateWindows(windows: readonly WindowLimit[]): void {
  if (windows.length === 0) throw new RangeError("rate limiter: at least one window is required");
  const seen = new Set<number>();
  for (const { windowSeconds, limit } of windows) {
    if (!Number.isInteger(windowSeconds) || windowSeconds < 1) {
      throw new RangeError(`rate limiter: windowSeconds must be a positive integer (got ${windowSeconds})`);
    }
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(`rate limiter: limit must be a positive integer (got ${limit})`);
    }
    if (seen.has(windowSeconds)) throw new RangeError(`rate limiter: duplicate ${windowSeconds}s window`);
    seen.add(windowSeconds);
  }
}

export interface Bucket {
  index: number;
  count: number;
}

/** What one window reports after the decision (the store's per-window reply). */
export interface WindowReport {
  /** The limit applied (a store's key record may replace the one asked for). */
  limit: number;
  remaining: number;
  resetAtMs: number;
  releaseAtMs: number;
  refused: boolean;
}

/**
 * One window's counted buckets, oldest first, with a running total. Expired buckets are dropped
 * lazily, whenever the window is looked at.
 */
export class WindowCounter {
  readonly buckets: Bucket[] = [];
  total = 0;

  readonly windowMs: number;
  readonly bucketMs: number;

  constructor(windowMs: number, bucketMs: number) {
    this.windowMs = windowMs;
    this.bucketMs = bucketMs;
  }

  static forWindow(windowSeconds: number): WindowCounter {
    return new WindowCounter(windowSeconds * 1000, bucketMsFor(windowSeconds));
  }

  /** Drops the buckets that no longer count at `nowMs`. */
  expire(nowMs: number): void {
    const first = firstCountedBucket(nowMs, this.windowMs, this.bucketMs);
    while (this.buckets.length > 0 && this.buckets[0]!.index < first) this.total -= this.buckets.shift()!.count;
  }

  /** Counts `n` requests (default one) at `nowMs`; a clock that steps back counts into the newest bucket. */
  add(nowMs: number, n = 1): void {
    const newest = this.buckets.at(-1);
    const index = Math.floor(nowMs / this.bucketMs);
    if (newest && newest.index >= index) newest.count += n;
    else this.buckets.push({ index, count: n });
    this.total += n;
  }

  /** The instant this window's newest counted request stops counting (its TTL). */
  expiresAt(nowMs: number): number {
    const newest = this.buckets.at(-1);
    return newest ? bucketExpiry(newest.index, this.windowMs, this.bucketMs) : nowMs;
  }

  /** Earliest instant ≥ now at which at most `target` of the counted requests still count. */
  whenAtMost(target: number, nowMs: number): number {
    let left = this.total;
    let at = nowMs;
    for (const bucket of this.buckets) {
      if (left <= target) return at;
      left -= bucket.count;
      at = bucketExpiry(bucket.index, this.windowMs, this.bucketMs);
    }
    return at;
  }

  report(limit: number, nowMs: number, refused: boolean): WindowReport {
    if (this.total === 0) {
      return { limit, remaining: limit, resetAtMs: nowMs, releaseAtMs: nowMs + this.windowMs, refused };
    }
    return {
      limit,
      remaining: Math.max(0, limit - this.total),
      resetAtMs: this.expiresAt(nowMs),
      releaseAtMs: this.whenAtMost(Math.min(this.total, limit) - 1, nowMs),
      refused,
    };
  }
}

/** Builds the Decision from the store's outcome and per-window reports. */
export function assembleDecision(
  outcome: Outcome,
  nowMs: number,
  banUntilMs: number,
  limits: readonly WindowLimit[],
  reports: readonly WindowReport[],
  plan?: PlanName,
): Decision {
  const windows: WindowResult[] = limits.map(({ windowSeconds }, i) => {
    const r = reports[i]!;
    return {
      windowSeconds,
      limit: r.limit,
      remaining: r.remaining,
      resetAt: Math.ceil(r.resetAtMs / 1000),
      releaseAtMs: r.releaseAtMs,
      refused: r.refused,
    };
  });
  let binding = 0;
  let retryAtMs = nowMs;
  if (outcome === "limited") {
    // The refusing window that keeps refusing longest.
    binding = windows.findIndex((w) => w.refused);
    windows.forEach((w, i) => {
      if (w.refused && w.releaseAtMs > windows[binding]!.releaseAtMs) binding = i;
    });
    retryAtMs = windows[binding]!.releaseAtMs;
  } else {
    // The window with the least remaining; on a tie the one that takes longer to refill.
    windows.forEach((w, i) => {
      const b = windows[binding]!;
      if (w.remaining < b.remaining || (w.remaining === b.remaining && w.resetAt > b.resetAt)) binding = i;
    });
    if (outcome === "banned") retryAtMs = banUntilMs;
  }
  const decision: Decision = { outcome, windows, binding, retryAfterSeconds: Math.ceil((retryAtMs - nowMs) / 1000), nowMs };
  if (plan) decision.plan = plan;
  return decision;
}

/** A counter that forgets itself at `untilMs` (strikes, offences). */
export interface Expiring {
  n: number;
  untilMs: number;
}

export interface BanState {
  banUntilMs: number;
  strikes?: Expiring | undefined;
  offences?: Expiring | undefined;
}

/**
 * Records one refused request. Strikes count within the current retry period (extended to each
 * refusal's retry instant); the `policy.after`-th strike bans the subject for
 * `banLengthMs(policy, offence)` and returns the ban's end. `policy.after <= 0` disables bans.
 */
export function recordStrike(state: BanState, policy: BanPolicy, nowMs: number, retryAtMs: number): number | undefined {
  if (policy.after <= 0) return undefined;
  const live = state.strikes && state.strikes.untilMs > nowMs ? state.strikes : { n: 0, untilMs: nowMs };
  const strikes = { n: live.n + 1, untilMs: Math.max(live.untilMs, retryAtMs) };
  if (strikes.n < policy.after) {
    state.strikes = strikes;
    return undefined;
  }
  const offence = (state.offences && state.offences.untilMs > nowMs ? state.offences.n : 0) + 1;
  state.banUntilMs = nowMs + banLengthMs(policy, offence);
  state.offences = { n: offence, untilMs: state.banUntilMs + OFFENCE_MEMORY_MS };
  state.strikes = undefined;
  return state.banUntilMs;
}

/** BAN_AFTER: an integer ≥ 0 (0 disables bans); BAN_SECONDS: an integer ≥ 1. */
export function validateBanPolicy(policy: BanPolicy): void {
  if (!Number.isSafeInteger(policy.after) || policy.after < 0) {
    throw new RangeError(`rate limiter: ban after must be an integer >= 0 (got ${policy.after})`);
  }
  if (!Number.isSafeInteger(policy.seconds) || policy.seconds < 1) {
    throw new RangeError(`rate limiter: ban seconds must be a positive integer (got ${policy.seconds})`);
  }
}
