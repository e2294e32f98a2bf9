/**
 * Quotas by plan as the limiter's windows. Every /v1 request counts against both windows.
 */
import type { ApiKey } from "../../lib/api-key-format.ts";
import { limitsFor, PLANS, type PlanLimits } from "../../lib/plans.ts";
import type { WindowLimit } from "../limiter/limiter.ts";

export const MINUTE_SECONDS = 60;
export const DAY_SECONDS = 86_400;

/** Requests without a valid key, per client address: the Free plan's limits. */
export const ANONYMOUS_LIMITS: Readonly<PlanLimits> = PLANS.free;

/** The two windows for the given per-minute and per-day limits, minute first. */
export function windowsForLimits(limits: PlanLimits): WindowLimit[] {
  return [
    { windowSeconds: MINUTE_SECONDS, limit: limits.perMinute },
    { windowSeconds: DAY_SECONDS, limit: limits.perDay },
  ];
}

export const windowsFor = (key: Pick<ApiKey, "plan" | "perMinute" | "perDay">): WindowLimit[] =>
  windowsForLimits(limitsFor(key));

export const ANONYMOUS_WINDOWS: readonly WindowLimit[] = Object.freeze(windowsForLimits(ANONYMOUS_LIMITS));
