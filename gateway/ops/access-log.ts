import type { RequestHandler, Response } from "express";
import type { Logger } from "../../lib/logger.ts";
import type { GatewayMetrics } from "./metrics.ts";
import { getOrCreate } from "../../lib/get-or-create.ts";
import { latencySeries, type LatencySeries } from "../../lib/openmetrics.ts";
import { endRequestSpan } from "../http/trace-requests.ts";
import { idsOf } from "../../lib/tracing/spans.ts";

interface Series {
  count: { inc(): void };
  duration: LatencySeries;
}

/** Status recorded for a response that never completed: the client left (or the answer was cut); nginx's convention. */
const NOT_COMPLETED = 499;

/**
 * One log line and one metrics observation per request, those that never completed included, and
 * the end of its span. Labelled by the route template (never the raw path) so metrics keep a
 * bounded number of series; never logs credentials. The line carries the request's trace and
 * span ids, and its latency a sampled request's trace as exemplar. `afterResponse` gets each
 * response with the status recorded (the usage history counts from it).
 */
export function observeRequests(deps: { metrics: GatewayMetrics; logger: Logger; afterResponse?: (res: Response, status: number) => void }): RequestHandler {
  // Label children made once per (route, method, status), not looked up by label object per request.
  // Bounded: route templates, the methods Node's parser accepts, status codes.
  const series = new Map<string, Series>();
  const seriesFor = (route: string, method: string, status: number): Series =>
    getOrCreate(series, `${route} ${method} ${status}`, () => {
      const labels = { route, method, status: String(status) };
      return { count: deps.metrics.httpRequests.labels(labels), duration: latencySeries(deps.metrics.httpDuration, labels) };
    });

  return (req, res, next) => {
    const start = performance.now();
    // "close" comes for every response, finished or not ("finish" never comes for one the client left).
    res.once("close", () => {
      const seconds = (performance.now() - start) / 1000;
      // The v1 router labels its requests up front (req.baseUrl is gone by now).
      const matched = res.locals.route ?? (req.route ? (req.route.path as string) : undefined);
      const route = matched ?? "unmatched";
      const completed = res.writableFinished;
      const status = completed ? res.statusCode : NOT_COMPLETED;
      const { span } = res.locals;
      endRequestSpan(span, req.method, matched, status, completed);
      const observed = seriesFor(route, req.method, status);
      observed.count.inc();
      // "close" is emitted outside the request's async context: the span is named, not looked up.
      observed.duration.observe(seconds, span);
      deps.afterResponse?.(res, status);
      // The log record is built only when it will be written (LOG_LEVEL may be above info).
      if (!deps.logger.isLevelEnabled("info")) return;
      const { traceId, spanId } = idsOf(span);
      deps.logger.info(
        {
          requestId: res.locals.requestId,
          traceId,
          spanId,
          method: req.method,
          route,
          url: req.originalUrl,
          status,
          ms: Math.round(seconds * 1e5) / 100,
          keyId: res.locals.apiKey?.keyId,
        },
        "request",
      );
    });
    next();
  };
}
