/**
 * The limiter's bucket geometry, shared by the gateway's limiter (gateway/limiter/sliding-window.ts
 * and its Lua script) and the keys tooling, which reads a key's usage from the same buckets.
 * A window of W ms is split into buckets of b = ceil(W / 60) ms; bucket i covers [i·b, (i+1)·b)
 * of the epoch and counts, in full, while it overlaps the rolling window (t − W, t].
 */
export const BUCKETS_PER_WINDOW = 60;

export const bucketMsFor = (windowSeconds: number): number =>
  Math.ceil((windowSeconds * 1000) / BUCKETS_PER_WINDOW);

/** Index of the oldest bucket still counted at `nowMs`. */
export const firstCountedBucket = (nowMs: number, windowMs: number, bucketMs: number): number =>
  Math.floor((nowMs - windowMs) / bucketMs);

/** The instant bucket `index` stops counting. */
export const bucketExpiry = (index: number, windowMs: number, bucketMs: number): number =>
  (index + 1) * bucketMs + windowMs;

/** Requests still counted at `nowMs` in a window of `windowSeconds`, from its buckets ([index, count]). */
export function countedAt(buckets: Iterable<readonly [number, number]>, windowSeconds: number, nowMs: number): number {
  const first = firstCountedBucket(nowMs, windowSeconds * 1000, bucketMsFor(windowSeconds));
  let total = 0;
  for (const [index, count] of buckets) if (index >= first) total += count;
  return total;
}
