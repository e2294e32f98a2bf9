/**
 * Usage history in the registry (DESIGN, Usage history and the consumer's view): what gateways
 * report, per key and hour, by outcome; hourly buckets kept 35 days, daily (UTC) 400 days. Shared
 * by both stores: the shapes, the SQL they have in common and the arithmetic of days and thresholds.
 */
import type { KeyEvent } from "../../lib/key-record.ts";

/** How a request with a valid key ended: admitted by its status class, or refused by the guard. */
export const USAGE_OUTCOMES = ["2xx", "4xx", "5xx", "limited", "banned", "forbidden"] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];
export type UsageCounts = Record<UsageOutcome, number>;

/** The column of each outcome, in USAGE_OUTCOMES' order. */
export const USAGE_COLUMNS = ["c2xx", "c4xx", "c5xx", "limited", "banned", "forbidden"] as const;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const HOURLY_RETENTION_MS = 35 * DAY_MS;
export const DAILY_RETENTION_MS = 400 * DAY_MS;
/**
 * A report id is remembered this long: a gateway retries one only until it is acknowledged, so
 * a retry after this would need the acknowledgement lost and the key service down for two days.
 */
export const REPORT_ID_RETENTION_MS = 2 * DAY_MS;
/** Two reports of one key's ban whose ends differ by less than this are the same ban (gateways round Retry-After to seconds). */
export const SAME_BAN_WITHIN_MS = 5_000;

export type UsageGranularity = "hour" | "day";

/** One key's counts of one hour (`hour`: its start, ms) in a report. */
export interface UsageBucketWrite extends UsageCounts {
  keyId: string;
  hour: number;
}

/** A gateway's report as the key service applies it (keys/usage-history/). */
export interface UsageReportWrite {
  reportId: string;
  /** When it was received: the time of its events and of the report id. */
  at: number;
  /** The reporting admin token's name: the actor of its events. */
  actor: string;
  buckets: UsageBucketWrite[];
  /** Bans a gateway saw start: a key.banned event for each one not recorded yet. */
  bans: { keyId: string; until: number }[];
  /** Last use per key: only moves forward, as touchLastUsed. */
  lastUsed: { keyId: string; at: number }[];
  /** The perDay in force of each key in `buckets`: a usage.threshold event when a UTC day's admitted requests reach a percent of it. */
  dailyLimits: Record<string, number>;
  /** Percents of perDay that make a usage.threshold event, each at most once per key and UTC day. */
  thresholdPercents: readonly number[];
}

export interface UsageReportApplied {
  /** The report id was seen before: nothing was written again. */
  duplicate: boolean;
  /** The key.banned and usage.threshold events it appended. */
  events: KeyEvent[];
}

/** One bucket of a history: `start` is its hour or UTC day (ms). */
export interface UsageBucket extends UsageCounts {
  start: number;
}

export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** Admitted requests (the daily quota counts those). */
export const admitted = (c: UsageCounts): number => c["2xx"] + c["4xx"] + c["5xx"];

/** The buckets' counts summed per key and UTC day (the daily rows a report adds to). */
export function dailyTotals(buckets: readonly UsageBucketWrite[]): UsageBucketWrite[] {
  const days = new Map<string, UsageBucketWrite>();
  for (const b of buckets) {
    const day = dayOf(b.hour);
    const k = `${b.keyId} ${day}`;
    const sum = days.get(k) ?? { keyId: b.keyId, hour: day, "2xx": 0, "4xx": 0, "5xx": 0, limited: 0, banned: 0, forbidden: 0 };
    for (const o of USAGE_OUTCOMES) sum[o] += b[o];
    days.set(k, sum);
  }
  return [...days.values()];
}

/** `INSERT … ON CONFLICT DO UPDATE` adding one bucket's counts (the same text on SQLite and PostgreSQL). */
export function addBucketSql(table: "usage_hourly" | "usage_daily", ph: (n: number) => string): string {
  const cols = ["key_id", "start", ...USAGE_COLUMNS];
  return `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map((_, i) => ph(i + 1)).join(", ")})
    ON CONFLICT (key_id, start) DO UPDATE SET ${USAGE_COLUMNS.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(", ")}`;
}

export const bucketValues = (b: UsageBucketWrite): (string | number)[] => [b.keyId, b.hour, ...USAGE_OUTCOMES.map((o) => b[o])];

export const historySql = (granularity: UsageGranularity, ph: (n: number) => string): string =>
  `SELECT start, ${USAGE_COLUMNS.join(", ")} FROM ${granularity === "hour" ? "usage_hourly" : "usage_daily"}
    WHERE key_id = ${ph(1)} AND start >= ${ph(2)} AND start < ${ph(3)} ORDER BY start`;

export function usageBucketOfRow(row: Record<string, unknown>): UsageBucket {
  const bucket = { start: Number(row.start) } as UsageBucket;
  USAGE_OUTCOMES.forEach((o, i) => (bucket[o] = Number(row[USAGE_COLUMNS[i]!])));
  return bucket;
}

/** What pruneUsage deletes at `now`: rows older than their retention. */
export const PRUNE_STATEMENTS = (ph: (n: number) => string): { sql: string; age: number }[] => [
  { sql: `DELETE FROM usage_hourly WHERE start < ${ph(1)}`, age: HOURLY_RETENTION_MS },
  { sql: `DELETE FROM usage_daily WHERE start < ${ph(1)}`, age: DAILY_RETENTION_MS },
  { sql: `DELETE FROM usage_reports WHERE at < ${ph(1)}`, age: REPORT_ID_RETENTION_MS },
  { sql: `DELETE FROM usage_thresholds WHERE day < ${ph(1)}`, age: 2 * DAY_MS },
];

/** The usage.threshold event of a key's day reaching `percent` of `limit` with `used` admitted requests. */
export const thresholdEvent = (r: UsageReportWrite, keyId: string, percent: number, used: number, limit: number) => ({
  at: r.at,
  actor: r.actor,
  type: "usage.threshold" as const,
  keyId,
  changes: { window: "day", percent, used, limit },
});

export const banEvent = (r: UsageReportWrite, keyId: string, until: number) => ({
  at: r.at,
  actor: r.actor,
  type: "key.banned" as const,
  keyId,
  changes: { until: new Date(until).toISOString() },
});

/** The percents a day with `used` admitted requests of `limit` has reached. */
export const reachedPercents = (percents: readonly number[], used: number, limit: number): number[] =>
  [...percents].sort((a, b) => a - b).filter((p) => used * 100 >= p * limit);
