import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream";
import { context, propagation, trace } from "@opentelemetry/api";
import type { RequestHandler, Response } from "express";
import { createProxyMiddleware, proxyEventsPlugin } from "http-proxy-middleware";
import type { Logger } from "../../lib/logger.ts";
import { ApiError, type ErrorCode } from "../../lib/http/errors.ts";
import { sendError } from "../../lib/http/error-response.ts";

/**
 * The store area and categories are not pet-service features: operators point them at HTTP
 * upstreams. They sit behind the same auth, quotas and headers; the upstream sees the path after
 * /v1 (appended to its URL's path), the caller's key id and plan, and never the key itself.
 */
export interface Upstream {
  /** Path prefix under /v1, e.g. "/store". */
  prefix: string;
  target: string;
}

/** Whether a path under /v1 belongs to `upstream` (its prefix itself or below it, never a look-alike). */
export const servedBy = (upstream: Upstream, path: string): boolean =>
  path === upstream.prefix || path.startsWith(`${upstream.prefix}/`);

const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"]);

/**
 * Headers the gateway answers for, whatever an upstream sends: the client's quota, the request
 * id it can quote, and the API's content policy. Content headers (type, caching, …) are the upstream's.
 */
const GATEWAY_OWNED = /^(x-ratelimit-|ratelimit$|ratelimit-policy$|x-request-id$|content-security-policy$|x-content-type-options$)/;

/** Connection failures the client can retry later (503) versus slowness (504); anything else is 502. */
const NETWORK_ERRORS: Readonly<Record<string, ErrorCode>> = {
  ECONNREFUSED: "service_unavailable",
  ENOTFOUND: "service_unavailable",
  EHOSTUNREACH: "service_unavailable",
  EAI_AGAIN: "service_unavailable",
  ETIMEDOUT: "upstream_timeout",
  ESOCKETTIMEDOUT: "upstream_timeout",
};

/**
 * What an upstream learns of the caller, set on the request before the proxy copies its headers:
 * the request id, the key's id and plan (the gateway's word, never the client's), the trace
 * context of the gateway's span, and never the key itself or cookies.
 */
const forwardCaller: RequestHandler = (req, res, next) => {
  const { headers } = req;
  delete headers.authorization;
  delete headers.cookie;
  delete headers["x-api-key-id"];
  delete headers["x-api-plan"];
  // The upstream continues the gateway's span, not the client's: its own traceparent replaces the client's.
  delete headers.traceparent;
  delete headers.tracestate;
  propagation.inject(trace.setSpan(context.active(), res.locals.span), headers);
  headers["x-request-id"] = res.locals.requestId;
  const apiKey = res.locals.apiKey;
  if (apiKey) {
    headers["x-api-key-id"] = apiKey.keyId;
    headers["x-api-plan"] = apiKey.plan;
  }
  next();
};

/** The upstream's handlers for the v1 router: the caller's headers, then the proxy. */
export function upstreamProxy(upstream: Upstream, opts: { timeoutMs: number; logger: Logger }): RequestHandler[] {
  const proxy = proxyTo(upstream, opts);
  return [(req, res, next) => (servedBy(upstream, req.path) ? forwardCaller(req, res, next) : next()), proxy];
}

function proxyTo(upstream: Upstream, opts: { timeoutMs: number; logger: Logger }): RequestHandler {
  // http-proxy reports its own proxyTimeout as a plain ECONNRESET; remember which were timeouts.
  const timedOut = new WeakSet<IncomingMessage>();
  const fail = (res: ServerResponse, err: ApiError) => {
    if (!res.headersSent) sendError(res as Response, err);
    else res.destroy();
  };

  return createProxyMiddleware<IncomingMessage, ServerResponse>({
    target: upstream.target,
    pathFilter: (path) => servedBy(upstream, path),
    changeOrigin: true,
    xfwd: true,
    proxyTimeout: opts.timeoutMs,
    selfHandleResponse: true,
    // Only the plugin that wires `on`: errors are answered here in our shape, and logged by us.
    ejectPlugins: true,
    plugins: [proxyEventsPlugin],
    on: {
      proxyReq(proxyReq, req) {
        proxyReq.once("timeout", () => timedOut.add(req));
      },
      proxyRes(proxyRes, req, res) {
        const status = proxyRes.statusCode ?? 502;
        // An upstream's own failure is ours to report in our shape: its body could leak internals.
        if (status >= 500) {
          proxyRes.resume();
          opts.logger.warn({ upstream: upstream.prefix, status, url: req.url }, "upstream failed");
          fail(res, new ApiError("bad_gateway"));
          return;
        }
        for (const [name, value] of Object.entries(proxyRes.headers)) {
          if (value !== undefined && !HOP_BY_HOP.has(name) && !GATEWAY_OWNED.test(name)) res.setHeader(name, value);
        }
        res.statusCode = status;
        // Not pipe(): an upstream that died mid-body left the client's response open for good.
        // pipeline cuts the client off then (and frees the upstream's socket if the client leaves).
        pipeline(proxyRes, res, (err) => {
          if (err) opts.logger.warn({ upstream: upstream.prefix, err: err.message, url: req.url }, "upstream response not completed");
        });
      },
      error(err, req, res) {
        const code = timedOut.has(req) ? "upstream_timeout" : (NETWORK_ERRORS[(err as NodeJS.ErrnoException).code ?? ""] ?? "bad_gateway");
        opts.logger.warn({ upstream: upstream.prefix, err: (err as Error).message, url: req.url }, "upstream unreachable");
        if ("setHeader" in res) fail(res, new ApiError(code));
      },
    },
  }) as unknown as RequestHandler;
}
