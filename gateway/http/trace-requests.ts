import { context, propagation, ROOT_CONTEXT, SpanStatusCode, type Span } from "@opentelemetry/api";
import type { RequestHandler } from "express";
import { requestContext, startServerSpan } from "../../lib/tracing/spans.ts";

/**
 * The gateway's SERVER span of every request, continuing the client's W3C `traceparent` (and
 * `tracestate`) when it sends a valid one; a malformed one is ignored and the request starts a
 * new trace. The rest of the request runs with the span active (logs, the limiter's span, the
 * gRPC call). It carries no header, key, token or body: the method, route, path, status and
 * request id only. observeRequests (ops/access-log.ts) ends it with the rest of the request's
 * bookkeeping (endRequestSpan).
 */
export function traceRequests(): RequestHandler {
  return (req, res, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = startServerSpan(req.method, parent);
    res.locals.span = span;
    // An unrecorded span (not sampled, or no endpoint) only carries ids: nothing to fill in.
    if (span.isRecording()) {
      span.setAttributes({
        "http.request.method": req.method,
        "url.path": req.path,
        "url.scheme": req.protocol,
        "network.protocol.version": req.httpVersion,
        "pet_store.request_id": res.locals.requestId,
      });
    }
    context.with(requestContext(span, res.locals.requestId), next);
  };
}

/**
 * Names the span by the route template once routing knows it (`GET /v1/pets/:petId`, never the
 * raw path), records the status and ends it. A server span's errors are its 5xx (a 4xx is the
 * client's); `completed` false is a response the client never got.
 */
export function endRequestSpan(span: Span, method: string, route: string | undefined, status: number, completed: boolean): void {
  if (!span.isRecording()) return;
  if (route !== undefined) {
    span.updateName(`${method} ${route}`);
    span.setAttribute("http.route", route);
  }
  span.setAttribute("http.response.status_code", status);
  if (!completed) span.setStatus({ code: SpanStatusCode.ERROR, message: "response not completed" });
  else if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
