/**
 * The anonymous quota: the limiter's windows per client address (ANONYMOUS_WINDOWS) that count
 * what no key's quota may — /v1 requests without a valid key, a key's own /v1/me*, and
 * POST /portal/signup — so a flood of them is refused before it costs anything.
 */
import type { Request } from "express";
import { subjectForAddress } from "../../lib/redis-keys.ts";
import type { Decision, LimiterStore, WindowLimit } from "../limiter/limiter.ts";

export interface AddressQuota {
  limiter: LimiterStore;
  anonymousWindows: readonly WindowLimit[];
}

/** Counts one request against its client address's anonymous quota (as TRUST_PROXY resolves the address). */
export function countAgainstAddress(deps: AddressQuota, req: Request): Promise<Decision> {
  return deps.limiter.hit(subjectForAddress(req.ip ?? "unknown"), deps.anonymousWindows);
}
