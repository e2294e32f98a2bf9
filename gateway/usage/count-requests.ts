import type { RequestHandler, Response } from "express";
import type { UsageOutcome } from "../../keys/registry/usage.ts";
import type { Clock } from "../../lib/clock.ts";
import type { UsageCounter } from "./counter.ts";

/** How a request with a valid key ended: the guard's refusal, else its status class (a response never completed: 4xx, as its 499). */
export function usageOutcome(res: Response, refused: UsageOutcome | undefined): UsageOutcome {
  if (refused) return refused;
  const status = res.writableFinished ? res.statusCode : 499;
  return status >= 500 ? "5xx" : status >= 400 ? "4xx" : "2xx";
}

/**
 * Counts every /v1 request the guard found a valid key on, once, when its response is over (the
 * status is known then): in memory, no I/O (gateway/usage/reporter.ts sends the counts).
 */
export function countUsage(counter: UsageCounter, clock: Clock): RequestHandler {
  return (_req, res, next) => {
    res.once("close", () => {
      const usage = res.locals.usage;
      if (!usage) return;
      const now = clock();
      counter.count(usage.keyId, usageOutcome(res, usage.refused), now);
      if (usage.banUntilMs !== undefined) counter.banned(usage.keyId, usage.banUntilMs, now);
    });
    next();
  };
}
