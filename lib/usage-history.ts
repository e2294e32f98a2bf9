/**
 * The usage history's vocabulary, shared by gateways (which count and report: gateway/usage/)
 * and the key service (which keeps and serves it: keys/registry/usage.ts, keys/usage-history/).
 */

/** How a request with a valid key ended: admitted by its status class, or refused by the guard. */
export const USAGE_OUTCOMES = ["2xx", "4xx", "5xx", "limited", "banned", "forbidden"] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];
export type UsageCounts = Record<UsageOutcome, number>;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

/** Two reports of one key's ban whose ends differ by less than this are the same ban (gateways round Retry-After to seconds). */
export const SAME_BAN_WITHIN_MS = 5_000;
