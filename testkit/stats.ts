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
