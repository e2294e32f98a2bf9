import type { RequestHandler } from "express";
import type { Logger } from "../lib/logger.js";
import type { GatewayMetrics } from "./metrics.js";

/**
 * One log line and one metrics observation per finished request. Labelled by the route template
 * (never the raw path) so metrics keep a bounded number of series; never logs credentials.
 */
export function observeRequests(deps: { metrics: GatewayMetrics; logger: Logger }): RequestHandler {
  return (req, res, next) => {
    const start = performance.now();
    res.once("finish", () => {
      const seconds = (performance.now() - start) / 1000;
      // The v1 router labels its requests up front (req.baseUrl is gone by "finish").
      const route: string = res.locals.route ?? (req.route ? (req.route.path as string) : "unmatched");
      const labels = { route, method: req.method, status: String(res.statusCode) };
      deps.metrics.httpRequests.inc(labels);
      deps.metrics.httpDuration.observe(labels, seconds);
      deps.logger.info(
        {
          requestId: res.locals.requestId,
          method: req.method,
          route,
          url: req.originalUrl,
          status: res.statusCode,
          ms: Math.round(seconds * 1e5) / 100,
          keyId: res.locals.apiKey?.keyId,
        },
        "request",
      );
    });
    next();
  };
}
