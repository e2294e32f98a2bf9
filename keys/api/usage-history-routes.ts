import type { Clock } from "../../lib/clock.ts";
import type { FeedFollower } from "../feed/follower.ts";
import type { KeyOperations } from "../operations/index.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { historyRange, readHistory } from "../usage-history/history.ts";
import { applyReport, REPORT_BODY_LIMIT_BYTES } from "../usage-history/report.ts";
import { callerOf } from "./auth.ts";
import { keyIdParam, parseInput } from "./input.ts";
import type { KeyServiceMetrics } from "./metrics.ts";
import type { Route } from "./route.ts";


export interface UsageHistoryRouteDeps {
  registry: KeyRegistry;
  operations: KeyOperations;
  follower: FeedFollower;
  clock: Clock;
  metrics: KeyServiceMetrics;
}

/** Gateways' usage reports in, a key's usage history out (DESIGN, Usage history and the consumer's view). */
export function usageHistoryRoutes(deps: UsageHistoryRouteDeps): Route[] {
  return [
    {
      method: "post",
      path: "/v1/usage/reports",
      scopes: ["gateway"],
      body: ["application/json"],
      bodyLimitBytes: REPORT_BODY_LIMIT_BYTES,
      handle: async (req, res) => {
        // rejected: not a report (400) or not applied (the registry's 503): the gateway keeps or drops it.
        let outcome = "rejected";
        try {
          const applied = await applyReport(deps, req.body, callerOf(res).name);
          outcome = applied.duplicate ? "duplicate" : "applied";
          if (applied.events.length > 0) deps.follower.poke();
        } finally {
          deps.metrics.usageReports.labels({ outcome }).inc();
        }
        res.status(202).json({ accepted: true });
      },
    },
    {
      method: "get",
      path: "/v1/keys/:id/usage/history",
      scopes: ["keys:read", "gateway"],
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        const range = historyRange(req.query, deps.clock());
        await deps.operations.get(id);
        res.json(await readHistory(deps.registry, id, range));
      },
    },
  ];
}
