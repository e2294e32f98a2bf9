import { z } from "zod";
import { keyEventJson } from "../../lib/key-record.ts";
import type { KeyRegistry } from "../registry/store.ts";
import type { FeedFollower } from "../feed/follower.ts";
import { parseInput } from "./input.ts";
import type { KeyServiceMetrics } from "./metrics.ts";
import { queryInt } from "./paging.ts";
import type { Route } from "./route.ts";

/** The longest a long poll is held (seconds): under common proxies' 60 s idle timeouts. */
export const MAX_WAIT_SECONDS = 30;

const eventsQuery = z.strictObject({
  after: z
    .string()
    .regex(/^[0-9]{1,15}$/, "must be a sequence number (an integer ≥ 0)")
    .transform(Number)
    .optional()
    .transform((v) => v ?? 0),
  limit: queryInt(1, 1000, 100),
  wait: queryInt(0, MAX_WAIT_SECONDS, 0),
});

/**
 * GET /v1/events: the audit log and the change feed, oldest first after `after`. With `wait` and
 * nothing newer, the answer is held until a row arrives (written by anyone: this replica, another
 * one, the command line; the follower reads them) or `wait` elapses (items: []).
 */
export function eventsRoutes(deps: { registry: KeyRegistry; follower: FeedFollower; metrics: KeyServiceMetrics }): Route[] {
  return [
    {
      method: "get",
      path: "/v1/events",
      scopes: ["keys:read", "gateway"],
      handle: async (req, res) => {
        const { after, limit, wait } = parseInput(eventsQuery, req.query, "query");
        let events = await deps.registry.events(after, limit);
        if (events.length === 0 && wait > 0) {
          const left = new AbortController();
          res.once("close", () => left.abort());
          deps.metrics.longPolls.inc();
          try {
            await deps.follower.waitAfter(after, wait * 1000, left.signal);
          } finally {
            deps.metrics.longPolls.dec();
          }
          if (left.signal.aborted) return;
          events = await deps.registry.events(after, limit);
        }
        res.json({
          items: events.map(keyEventJson),
          nextCursor: events.length === limit ? String(events.at(-1)!.seq) : null,
        });
      },
    },
  ];
}
