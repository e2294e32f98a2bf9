import { z } from "zod";
import type { Clock } from "../../lib/clock.ts";
import { KEY_ID_PATTERN } from "../../lib/api-key-format.ts";
import { parseInput } from "../api/input.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { HOUR_MS, USAGE_OUTCOMES, type UsageReportApplied, type UsageReportWrite } from "../registry/usage.ts";

/** usage.threshold at these percents of a key's perDay (DESIGN, Webhooks). */
export const THRESHOLD_PERCENTS = [80, 100] as const;
/** Key-hours in one report at most: a gateway sends larger backlogs over several (gateway/usage/). */
export const MAX_REPORT_BUCKETS = 5_000;
/** A report of MAX_REPORT_BUCKETS key-hours fits (about 150 bytes each). */
export const REPORT_BODY_LIMIT_BYTES = 1024 * 1024;

const keyId = z.string({ error: "must be a key id" }).regex(KEY_ID_PATTERN, "is not a key id");
const iso = z.iso.datetime({ offset: true, error: "must be an ISO 8601 time" }).transform((v) => Date.parse(v));
const count = z.number({ error: "must be an integer" }).int("must be an integer").min(0, "must be ≥ 0").max(1e12, "must be at most 10^12");
const bucket = z.strictObject({
  keyId,
  hour: iso.refine((ms) => ms % HOUR_MS === 0, "must be the start of an hour (minutes and seconds 0)"),
  ...Object.fromEntries(USAGE_OUTCOMES.map((o) => [o, count])),
}) as unknown as z.ZodType<{ keyId: string; hour: number } & Record<(typeof USAGE_OUTCOMES)[number], number>>;
const reportBody = z.strictObject({
  reportId: z.uuid({ error: "must be a UUID" }),
  gatewayId: z.string({ error: "must be a string" }).min(1, "must not be empty").max(200, "must be at most 200 characters"),
  buckets: z.array(bucket, { error: "must be a list" }).max(MAX_REPORT_BUCKETS, `must hold at most ${MAX_REPORT_BUCKETS} buckets`),
  bans: z.array(z.strictObject({ keyId, until: iso }), { error: "must be a list" }).max(MAX_REPORT_BUCKETS).default([]),
  lastUsed: z.array(z.strictObject({ keyId, at: iso }), { error: "must be a list" }).max(MAX_REPORT_BUCKETS).default([]),
});

/**
 * POST /v1/usage/reports: a gateway's counts, applied in one transaction with its report id
 * (a retry applies nothing twice), its bans as key.banned events, and usage.threshold events
 * for the keys whose UTC day's admitted requests reached 80 % or 100 % of their perDay in force.
 * Throws 400 naming the field for a body that is not a report.
 */
export async function applyReport(deps: { registry: KeyRegistry; clock: Clock }, body: unknown, actor: string): Promise<UsageReportApplied> {
  const report = parseInput(reportBody, body, "body");
  const dailyLimits: Record<string, number> = {};
  for (const id of new Set(report.buckets.map((b) => b.keyId))) {
    const record = await deps.registry.getKey(id);
    if (record) dailyLimits[id] = record.limits.perDay;
  }
  const write: UsageReportWrite = {
    reportId: report.reportId,
    at: deps.clock(),
    actor,
    buckets: report.buckets,
    bans: report.bans,
    lastUsed: report.lastUsed,
    dailyLimits,
    thresholdPercents: THRESHOLD_PERCENTS,
  };
  return deps.registry.applyUsageReport(write);
}
