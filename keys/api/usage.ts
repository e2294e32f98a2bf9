import type { Clock } from "../../lib/clock.ts";
import { ApiError } from "../../lib/http/errors.ts";
import type { KeyRecord } from "../../lib/key-record.ts";
import { keyUsage, type KeyUsage } from "../usage.ts";

/**
 * GET /v1/keys/{id}/usage, as `keys usage --json` (keys/usage.ts): Redis with REDIS_URL, else what
 * a gateway without Redis published to KEYS_DIR/usage.json. A store that cannot be read is a 503.
 */
export function usageReader(deps: { keysDir: string; redisUrl?: string | undefined; clock: Clock }): (record: KeyRecord) => Promise<KeyUsage> {
  return (record) =>
    keyUsage(record, deps.keysDir, { now: deps.clock(), ...(deps.redisUrl && { redisUrl: deps.redisUrl }) }).catch(() => {
      const err = new ApiError("service_unavailable", "The limiter's usage cannot be read now; retry later.");
      err.retryAfterSeconds = 1;
      throw err;
    });
}
