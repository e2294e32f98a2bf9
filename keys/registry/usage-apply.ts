/**
 * Applying a usage report, written once for both stores as the statements it runs in order: each
 * store drives the steps inside one transaction (SQLite synchronously in its writer thread,
 * PostgreSQL awaiting each), so the report id, the counts, last use and the events it makes
 * commit together or not at all.
 */
import type { KeyEvent } from "../../lib/key-record.ts";
import type { NewEvent } from "./store.ts";
import {
  addBucketSql,
  admitted,
  banEvent,
  bucketValues,
  dailyTotals,
  reachedPercents,
  SAME_BAN_WITHIN_MS,
  thresholdEvent,
  usageBucketOfRow,
  type UsageReportApplied,
  type UsageReportWrite,
} from "./usage.ts";

/** `run`: changed rows; `get`: the first row; `event`: the event appended. */
export type UsageStep = { run: string; values: unknown[] } | { get: string; values: unknown[] } | { event: NewEvent };
export type UsageStepResult = number | Record<string, unknown> | undefined | KeyEvent;

type Steps = Generator<UsageStep, UsageReportApplied, UsageStepResult>;

export function* applyUsageSteps(r: UsageReportWrite, ph: (n: number) => string): Steps {
  const claimed = yield { run: `INSERT INTO usage_reports (report_id, at) VALUES (${ph(1)}, ${ph(2)}) ON CONFLICT (report_id) DO NOTHING`, values: [r.reportId, r.at] };
  if (claimed === 0) return { duplicate: true, events: [] };
  const events: KeyEvent[] = [];
  for (const b of r.buckets) yield { run: addBucketSql("usage_hourly", ph), values: bucketValues(b) };
  const days = dailyTotals(r.buckets);
  for (const d of days) yield { run: addBucketSql("usage_daily", ph), values: bucketValues(d) };
  for (const { keyId, at } of r.lastUsed) {
    // Last use only moves forward: reports from several gateways arrive in any order.
    yield { run: `UPDATE keys SET last_used_at = ${ph(2)} WHERE id = ${ph(1)} AND (last_used_at IS NULL OR last_used_at < ${ph(2)})`, values: [keyId, at] };
  }
  for (const { keyId, until } of r.bans) {
    const known = (yield { get: `SELECT until FROM usage_bans WHERE key_id = ${ph(1)}`, values: [keyId] }) as Record<string, unknown> | undefined;
    if (known && Number(known.until) >= until - SAME_BAN_WITHIN_MS) continue;
    yield {
      run: `INSERT INTO usage_bans (key_id, until) VALUES (${ph(1)}, ${ph(2)}) ON CONFLICT (key_id) DO UPDATE SET until = excluded.until`,
      values: [keyId, until],
    };
    events.push((yield { event: banEvent(r, keyId, until) }) as KeyEvent);
  }
  for (const d of days) {
    const limit = r.dailyLimits[d.keyId];
    if (limit === undefined) continue;
    const row = (yield { get: `SELECT start, c2xx, c4xx, c5xx, limited, banned, forbidden FROM usage_daily WHERE key_id = ${ph(1)} AND start = ${ph(2)}`, values: [d.keyId, d.hour] }) as Record<string, unknown>;
    const used = admitted(usageBucketOfRow(row));
    for (const percent of reachedPercents(r.thresholdPercents, used, limit)) {
      const marked = yield {
        run: `INSERT INTO usage_thresholds (key_id, day, percent) VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}) ON CONFLICT (key_id, day, percent) DO NOTHING`,
        values: [d.keyId, d.hour, percent],
      };
      if (marked === 1) events.push((yield { event: thresholdEvent(r, d.keyId, percent, used, limit) }) as KeyEvent);
    }
  }
  return { duplicate: false, events };
}
