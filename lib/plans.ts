/**
 * Plans and their limits (spec "Rate limits by plan"): what the gateway enforces and what the keys
 * tooling records when it changes a key's plan.
 */
import type { ApiKey, PlanName } from "./api-key-format.ts";

export interface PlanLimits {
  perMinute: number;
  perDay: number;
}

export const PLANS: Readonly<Record<Exclude<PlanName, "enterprise">, Readonly<PlanLimits>>> = Object.freeze({
  free: Object.freeze({ perMinute: 60, perDay: 1_000 }),
  pro: Object.freeze({ perMinute: 300, perDay: 10_000 }),
  business: Object.freeze({ perMinute: 1_000, perDay: 100_000 }),
});

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
