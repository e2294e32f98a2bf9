/**
 * Quotas by plan (spec "Rate limits by plan"). Every /v1 request counts against both windows.
 */
import type { ApiKey, PlanName } from "../../lib/api-key-format.ts";
import type { WindowLimit } from "../limiter/limiter.ts";

export const MINUTE_SECONDS = 60;
export const DAY_SECONDS = 86_400;

export interface PlanLimits {
  perMinute: number;
  perDay: number;
}

export const PLANS: Readonly<Record<Exclude<PlanName, "enterprise">, Readonly<PlanLimits>>> = Object.freeze({
  free: Object.freeze({ perMinute: 60, perDay: 1_000 }),
  pro: Object.freeze({ perMinute: 300, perDay: 10_000 }),
  business: Object.freeze({ perMinute: 1_000, perDay: 100_000 }),
});

/** Requests without a valid key, per client address: the Free plan's limits. */
export const ANONYMOUS_LIMITS: Readonly<PlanLimits> = PLANS.free;

/** The two windows for the given per-minute and per-day limits, minute first. */
export function windowsForLimits(limits: PlanLimits): WindowLimit[] {
  return [
    { windowSeconds: MINUTE_SECONDS, limit: limits.perMinute },
    { windowSeconds: DAY_SECONDS, limit: limits.perDay },
  ];
}

const isLimit = (n: number | undefined): n is number => Number.isSafeInteger(n) && n! >= 1;

/**
 * The key's limits: its plan's, or for Enterprise the limits the key carries. An Enterprise key
 * missing a valid limit gets the Free plan's for that window (fails safe; the keys CLI always
 * sets both).
 */
export function limitsFor(key: Pick<ApiKey, "plan" | "perMinute" | "perDay">): PlanLimits {
  if (key.plan !== "enterprise") return PLANS[key.plan];
  return {
    perMinute: isLimit(key.perMinute) ? key.perMinute : PLANS.free.perMinute,
    perDay: isLimit(key.perDay) ? key.perDay : PLANS.free.perDay,
  };
}

export const windowsFor = (key: Pick<ApiKey, "plan" | "perMinute" | "perDay">): WindowLimit[] =>
  windowsForLimits(limitsFor(key));

export const ANONYMOUS_WINDOWS: readonly WindowLimit[] = Object.freeze(windowsForLimits(ANONYMOUS_LIMITS));
