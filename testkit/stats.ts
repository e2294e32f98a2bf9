/** Numbers for the benchmarks: percentiles, medians, CPU time of this process, and formatting. */

export const percentile = (sorted: readonly number[], q: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : NaN;

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** CPU time (user + system) this process has used since `since` (a process.cpuUsage() value), in µs. */
export const cpuSince = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

/** Mean wall-clock µs per call of `calls` sequential calls. */
export async function timePerCall(call: () => Promise<unknown>, calls = 200): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) await call();
  return ((performance.now() - started) * 1000) / calls;
}

export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "—";
export const ms = (n: number): string => fmt(n, n < 10 ? 1 : 0);
export const today = (): string => new Date().toISOString().slice(0, 10);

/** Cumulative histogram buckets, `le` ascending with +Inf last (testkit/promql.ts histogramBuckets). */
export type Buckets = readonly { le: number; count: number }[];

/**
 * The observations between two scrapes of one histogram: how many, the bucket bound at or under
 * which a fraction `q` of them fall, and the bounds of the bucket holding the largest.
 */
export function bucketSpread(before: Buckets, after: Buckets): { count: number; atMost(q: number): number; largest: [number, number] } {
  const counts = after.map((b) => ({ le: b.le, count: b.count - (before.find((x) => x.le === b.le)?.count ?? 0) }));
  const count = counts.at(-1)?.count ?? 0;
  const atMost = (q: number) => counts.find((b) => b.count >= q * count)?.le ?? NaN;
  const top = counts.findIndex((b) => b.count === count);
  return { count, atMost, largest: [top > 0 ? counts[top - 1]!.le : 0, counts[top]?.le ?? NaN] };
}
