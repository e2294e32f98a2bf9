import type { PlanName } from "../lib/api-key-format.ts";
import { limitsFor } from "../lib/plans.ts";
import type { PlanOverride } from "../lib/key-changes.ts";
import { liveIssuedKey, publishOrExplain, updateChange } from "./changes.ts";
import { validatePlanLimits } from "./issue.ts";
import { publishKeyChange, withRedis } from "./redis.ts";

export interface SetPlanOptions {
  plan: PlanName;
  /** Enterprise only, and then required (with perDay). */
  perMinute?: number;
  perDay?: number;
  /** When set, the key's record in Redis is updated too (every replica, from the key's next request). */
  redisUrl?: string;
  /** Milliseconds since the epoch; defaults to now. */
  now?: number;
}

export interface SetPlanResult extends PlanOverride {
  keyId: string;
  /** The key's record in Redis was updated. */
  redis: boolean;
}

/**
 * Changes an issued key's plan (or an enterprise key's limits) in place: recorded in
 * KEYS_DIR/key-changes.json (gateways polling it apply it within about a second) and, with
 * `redisUrl`, in the key's Redis record (every replica, from the key's next request). The key's
 * counts carry over. Throws UsageError for a bad plan or limits, KeysError for a key never
 * issued, revoked or expired (nothing changed), or an unreachable Redis (the file changed).
 */
export async function setPlan(keysDir: string, keyOrId: string, opts: SetPlanOptions): Promise<SetPlanResult> {
  validatePlanLimits(opts);
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  const { keyId } = liveIssuedKey(keysDir, keyOrId, nowSeconds);
  const override: PlanOverride = { plan: opts.plan, ...limitsFor(opts) };
  const change = updateChange(keysDir, keyId, (current) => ({ ...current, ...override, planChangedAt: nowSeconds }));
  const redis = await publishOrExplain(keysDir, opts.redisUrl, (url) => withRedis(url, (client) => publishKeyChange(client, keyId, change)));
  return { keyId, ...override, redis };
}
