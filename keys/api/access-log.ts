import type { RequestHandler } from "express";
import type { Logger } from "../../lib/logger.ts";
import type { KeyServiceMetrics } from "./metrics.ts";

/** Status recorded for a response that never completed: the client left; nginx's convention. */
const NOT_COMPLETED = 499;

/**
 * One log line and one metrics observation per request, labelled by the route template (never the
 * raw path). The line names the admin token by its name (`actor`), never the Authorization header
 * or a token; the URL is logged without its query (a cursor is opaque, and nothing secret belongs
 * in a query, but nothing secret gets logged if someone puts it there).
 */
export function accessLog(deps: { metrics: KeyServiceMetrics; logger: Logger }): RequestHandler {
  return (req, res, next) => {
    const start = performance.now();
    res.once("close", () => {
      const seconds = (performance.now() - start) / 1000;
      const route = (res.locals.route as string | undefined) ?? "unmatched";
      const status = res.writableFinished ? res.statusCode : NOT_COMPLETED;
      const labels = { route, method: req.method, status: String(status) };
      deps.metrics.httpRequests.inc(labels);
      deps.metrics.httpDuration.labels(labels).observe(seconds);
      deps.logger.info(
        {
          requestId: res.locals.requestId,
          method: req.method,
          route,
          path: req.path,
          status,
          ms: Math.round(seconds * 1e5) / 100,
          actor: (res.locals.caller as { name?: string } | undefined)?.name,
        },
        "request",
      );
    });
    next();
  };
}
