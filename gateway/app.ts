import { readFileSync } from "node:fs";
import { context } from "@opentelemetry/api";
import express, { type Request, type Response } from "express";
import type { Logger } from "../lib/logger.ts";
import type { KeyVerifier } from "./auth/jwt-verifier.ts";
import type { KeyStateView } from "./auth/key-state.ts";
import { deprecationHeaders, type Deprecation } from "./http/deprecation.ts";
import { docsRouter } from "../lib/http/docs.ts";
import { ApiError } from "../lib/http/errors.ts";
import { errorHandler } from "./http/error-handler.ts";
import { sendError } from "../lib/http/error-response.ts";
import { guard } from "./quota/guard.ts";
import type { LimiterStore, WindowLimit } from "./limiter/limiter.ts";
import type { PetClient } from "./pet-client/pet-client.ts";
import { observeRequests } from "./ops/access-log.ts";
import type { GatewayMetrics } from "./ops/metrics.ts";
import { opsRouter } from "./ops/routes.ts";
import { portalRouter, type PortalDeps } from "./portal/routes.ts";
import { admittedKey } from "./http/locals.ts";
import { requestContext } from "../lib/http/request-context.ts";
import { traceRequests } from "./http/trace-requests.ts";
import { ROUTES, type Route } from "./http/routes.ts";
import { servedBy, upstreamProxy, type Upstream } from "./upstreams/upstreams.ts";
import type { Clock } from "../lib/clock.ts";
import { usageRecorder } from "./usage/count-requests.ts";
import type { UsageCounter } from "./usage/counter.ts";
import type { HistoryReader } from "./usage/key-service-client.ts";
import { meRoutes, SELF_SERVICE_ROUTES } from "./usage/me-routes.ts";

const OPENAPI_JSON = readFileSync(new URL("./http/openapi.json", import.meta.url), "utf8");

/** Each route's path template as a regular expression over the raw (undecoded) path. */
const ROUTE_PATTERNS = ROUTES.map((route) => ({
  route,
  label: `/v1${route.path}`,
  pattern: new RegExp(`^${route.path.replace(/:[A-Za-z]+/g, "[^/]+")}/?$`),
}));

/** Read-only: sending it does not change it, so one instance serves every 404 (no stack trace per request). */
const NOT_FOUND = new ApiError("not_found");

export interface AppDeps {
  pets: PetClient;
  verifier: KeyVerifier;
  limiter: LimiterStore;
  keys: KeyStateView;
  clock: Clock;
  logger: Logger;
  /** Express "trust proxy": which X-Forwarded-For hops name the client (TRUST_PROXY). */
  trustProxy: boolean | number | string;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  anonymousWindows: readonly WindowLimit[];
  metrics: GatewayMetrics;
  /** HTTP upstreams for the areas the pet service does not own (/store, /categories). */
  upstreams: readonly Upstream[];
  upstreamTimeoutMs: number;
  /** Why the gateway should not get traffic now (pet service, Redis, shutting down); empty when ready. */
  readiness: () => Promise<string[]>;
  /** GET /portal and, with SIGNUP=open, POST /portal/signup (whose tries count against the anonymous quota). */
  portal: Omit<PortalDeps, "limiter" | "anonymousWindows">;
  /** Each valid key's requests counted for its usage history (gateway/usage/; none with USAGE_REPORTING=off); GET /v1/me/usage reads it from the key service. */
  usage: { counter: UsageCounter | undefined; history: HistoryReader };
}

/** Builds the gateway's Express app. It does not listen: main.ts and tests do. */
export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.use(requestContext());
  app.use(traceRequests());
  app.use(observeRequests({ ...deps, ...(deps.usage.counter && { afterResponse: usageRecorder(deps.usage.counter, deps.clock) }) }));
  // /v1 first: the API's requests (nearly all of them) do not walk past the ops routes. The two
  // never overlap: ops paths are outside /v1, and the v1 router answers everything under /v1.
  app.use("/v1", v1Router(deps));
  app.use(opsRouter(deps));
  app.use(portalRouter({ ...deps.portal, limiter: deps.limiter, anonymousWindows: deps.anonymousWindows }));
  app.use(docsRouter({ title: "Pet Store API reference", openapiPath: "/v1/openapi.json" }));
  app.use((_req: Request, res: Response) => sendError(res, NOT_FOUND));
  app.use(errorHandler(deps.logger));
  return app;
}

function v1Router(deps: AppDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  // The API description is public: no key, no quota.
  router.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(OPENAPI_JSON);
  });
  const rawBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });
  // The body's last chunk, not this request's async context, calls next: the handler after it
  // runs in the request's context again (its span, its log fields).
  const readBody: express.RequestHandler = (req, res, next) => rawBody(req, res, context.bind(context.active(), next));

  // Before anything decodes parameters: the route template labels metrics and logs (even for
  // 401/429), and deprecation headers go on every response of a deprecated operation.
  router.use((req, res, next) => {
    const path = req.path;
    const method = req.method === "HEAD" ? "GET" : req.method;
    let route: string | undefined;
    let deprecation: Deprecation | undefined;
    for (const p of ROUTE_PATTERNS) {
      if (!p.pattern.test(path)) continue;
      route ??= p.label;
      if (p.route.method === method) deprecation = p.route.deprecation;
    }
    if (route === undefined && SELF_SERVICE_ROUTES.has(`/v1${path}`)) route = `/v1${path}`;
    if (route === undefined) {
      const upstream = deps.upstreams.find((u) => servedBy(u, path));
      if (upstream) route = `/v1${upstream.prefix}/*`;
    }
    if (route !== undefined) res.locals.route = route;
    if (deprecation) res.set(deprecationHeaders(deprecation));
    next();
  });

  router.use(guard(deps));
  router.use(meRoutes(deps.usage.history));

  for (const route of ROUTES) {
    const handlers = route.hasBody ? [readBody, serve(route, deps)] : [serve(route, deps)];
    router[route.method === "GET" ? "get" : "post"](route.path, ...handlers);
  }

  for (const upstream of deps.upstreams) {
    router.use(upstreamProxy(upstream, { timeoutMs: deps.upstreamTimeoutMs, logger: deps.logger }));
  }

  // A known path with another method: 405 naming the allowed ones.
  for (const path of new Set(ROUTES.map((r) => r.path))) {
    const allowed = ROUTES.filter((r) => r.path === path).flatMap((r) => (r.method === "GET" ? ["GET", "HEAD"] : [r.method]));
    router.all(path, (_req, res) => {
      res.set("Allow", allowed.join(", "));
      sendError(res, new ApiError("method_not_allowed", `Allowed methods: ${allowed.join(", ")}.`));
    });
  }
  for (const path of SELF_SERVICE_ROUTES) {
    router.all(path.slice("/v1".length), (_req, res) => {
      res.set("Allow", "GET, HEAD");
      sendError(res, new ApiError("method_not_allowed", "Allowed methods: GET, HEAD."));
    });
  }
  router.use((_req, res) => sendError(res, NOT_FOUND));
  return router;
}

function serve(route: Route, deps: AppDeps): express.RequestHandler {
  return async (req, res) => {
    const result = await route.handle(req, {
      pets: deps.pets,
      clock: deps.clock,
      requestId: res.locals.requestId,
      keyId: admittedKey(res.locals).keyId,
    });
    if (result.headers) for (const name in result.headers) res.setHeader(name, result.headers[name]!);
    sendJson(req, res, result.status, result.body);
  };
}

const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/**
 * What `res.status(status).type("application/json").send(body)` writes, without its per-response
 * content-type parsing and string-to-Buffer copy. Conditional requests still go through res.send,
 * whose freshness check (304) they may trigger.
 */
function sendJson(req: Request, res: Response, status: number, body: string): void {
  if (req.headers["if-none-match"] !== undefined || req.headers["if-modified-since"] !== undefined) {
    res.status(status).type("application/json").send(body);
    return;
  }
  res.statusCode = status;
  res.setHeader("Content-Type", JSON_CONTENT_TYPE);
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}
