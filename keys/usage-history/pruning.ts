import type { Clock } from "../../lib/clock.ts";
import type { Logger } from "../../lib/logger.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { HOUR_MS } from "../registry/usage.ts";

/**
 * Deletes usage past its retention (hourly buckets 35 days, daily 400) at start and then every
 * hour, by `clock`. Every replica does: deleting what is gone already costs an index look.
 * Returns the stop function.
 */
export function startUsagePruning(deps: { registry: KeyRegistry; clock: Clock; logger: Logger }, intervalMs = HOUR_MS): () => void {
  const prune = () =>
    deps.registry.pruneUsage(deps.clock()).catch((err: unknown) => deps.logger.warn({ err }, "pruning old usage failed; retrying within the hour"));
  void prune();
  const timer = setInterval(prune, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
