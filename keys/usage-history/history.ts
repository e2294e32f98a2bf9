import { z } from "zod";
import { invalidRequest } from "../../lib/http/errors.ts";
import { parseInput } from "../api/input.ts";
import type { KeyRegistry } from "../registry/store.ts";
import {
  admitted,
  DAILY_RETENTION_MS,
  DAY_MS,
  dayOf,
  HOUR_MS,
  hourOf,
  HOURLY_RETENTION_MS,
  USAGE_OUTCOMES,
  type UsageBucket,
  type UsageCounts,
  type UsageGranularity,
} from "../registry/usage.ts";

/** A history as GET /v1/keys/{id}/usage/history, GET /v1/me/usage and `keys usage --history --json` show it. */
export interface UsageHistoryJson {
  granularity: UsageGranularity;
  buckets: ({ start: string; total: number } & UsageCounts)[];
}

export interface HistoryRange {
  granularity: UsageGranularity;
  from: number;
  to: number;
}

const SPAN = {
  hour: { unit: HOUR_MS, floor: hourOf, defaultMs: 48 * HOUR_MS, maxMs: HOURLY_RETENTION_MS, most: "35 days" },
  day: { unit: DAY_MS, floor: dayOf, defaultMs: 30 * DAY_MS, maxMs: DAILY_RETENTION_MS, most: "400 days" },
} as const;

const iso = z.iso.datetime({ offset: true, error: "must be an ISO 8601 time (2030-01-01T00:00:00Z)" }).transform((v) => Date.parse(v));
const historyQuery = z.strictObject({
  granularity: z.enum(["hour", "day"], { error: "must be hour or day" }).default("hour"),
  from: iso.optional(),
  to: iso.optional(),
});

/**
 * The range a query asks for, as the history's buckets cover it: `from` down to its bucket's
 * start; by default the last 48 hours (hour) or 30 days (day), the current one included; at most
 * 35 days of hours or 400 days of days. Throws 400 invalid_request naming the field.
 */
export function historyRange(query: unknown, now: number): HistoryRange {
  const q = parseInput(historyQuery, query, "query");
  const span = SPAN[q.granularity];
  const to = q.to ?? span.floor(now) + span.unit;
  const from = span.floor(q.from ?? to - span.defaultMs);
  if (from >= to) throw invalidRequest([{ field: q.from === undefined ? "query.to" : "query.from", message: "must be before to" }]);
  if (to - from > span.maxMs) throw invalidRequest([{ field: "query.from", message: `must be at most ${span.most} before to for granularity=${q.granularity}` }]);
  return { granularity: q.granularity, from, to };
}

export function historyJson(granularity: UsageGranularity, buckets: readonly UsageBucket[]): UsageHistoryJson {
  return {
    granularity,
    buckets: buckets.map((b) => ({
      start: new Date(b.start).toISOString(),
      total: admitted(b) + b.limited + b.banned + b.forbidden,
      ...(Object.fromEntries(USAGE_OUTCOMES.map((o) => [o, b[o]])) as UsageCounts),
    })),
  };
}

export async function readHistory(registry: KeyRegistry, keyId: string, range: HistoryRange): Promise<UsageHistoryJson> {
  return historyJson(range.granularity, await registry.usageHistory(keyId, range.granularity, range.from, range.to));
}
