import type { Response } from "express";
import type { UsageOutcome } from "../../lib/usage-history.ts";
import type { Clock } from "../../lib/clock.ts";
import type { UsageCounter } from "./counter.ts";

const statusClass = (status: number): UsageOutcome => (status >= 500 ? "5xx" : status >= 400 ? "4xx" : "2xx");

/**
 * Counts every /v1 request the guard found a valid key on, once, when its response is over: the
 * access log calls it with the status it records (a response never completed: its 499, a 4xx),
 * the guard's refusal taking precedence. In memory, no I/O (gateway/usage/reporter.ts sends the counts).
 */
export function usageRecorder(counter: UsageCounter, clock: Clock): (res: Response, status: number) => void {
  return (res, status) => {
    const usage = res.locals.usage;
    if (!usage) return;
    const now = clock();
    counter.count(usage.keyId, usage.refused ?? statusClass(status), now);
    if (usage.banUntilMs !== undefined) counter.banned(usage.keyId, usage.banUntilMs, now);
  };
}
