import { readFileSync } from "node:fs";
import express, { type Request, type Response } from "express";
import type { Logger } from "../lib/logger.js";
import type { ApiKey, KeyVerifier } from "./auth/api-key.js";
import { deprecationHeaders } from "./deprecation.js";
import { ApiError } from "./errors.js";
import { errorHandler, sendError } from "./error-handler.js";
import { guard } from "./guard.js";
import type { Clock, LimiterStore, WindowLimit } from "./limiter/limiter.js";
import type { PetClient } from "./pet-client.js";
import { observeRequests } from "./access-log.js";
import type { GatewayMetrics } from "./metrics.js";
import { opsRouter } from "./ops-routes.js";
import { requestContext } from "./request-context.js";
import { ROUTES, type Route } from "./routes.js";
import { servedBy, upstreamProxy, type Upstream } from "./upstreams.js";

const OPENAPI_JSON = readFileSync(new URL("./openapi.json", import.meta.url), "utf8");

/** Each route's path template as a regular expression over the raw (undecoded) path. */
const ROUTE_PATTERNS = ROUTES.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/:[A-Za-z]+/g, "[^/]+")}/?$`),
}));

export interface AppDeps {
  pets: PetClient;
  verifier: KeyVerifier;
  limiter: LimiterStore;
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
}

/** Builds the gateway's Express app. It does not listen: main.ts and tests do. */
export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", deps.trustProxy);
  app.use(requestContext());
  app.use(observeRequests(deps));
  app.use(opsRouter(deps));
  app.use("/v1", v1Router(deps));
  app.use((_req: Request, res: Response) => sendError(res, new ApiError("not_found")));
  app.use(errorHandler(deps.logger));
  return app;
}

function v1Router(deps: AppDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  // The API description is public: no key, no quota.
  router.get("/openapi.json", (_req, res) => {
    res.type("application/json").send(OPENAPI_JSON);
  });
  const readBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });

  // Before anything decodes parameters: the route template labels metrics and logs (even for
  // 401/429), and deprecation headers go on every response of a deprecated operation.
  router.use((req, res, next) => {
    const matches = ROUTE_PATTERNS.filter((p) => p.pattern.test(req.path));
    const upstream = deps.upstreams.find((u) => servedBy(u, req.path));
    if (matches[0]) res.locals.route = `/v1${matches[0].route.path}`;
    else if (upstream) res.locals.route = `/v1${upstream.prefix}/*`;
    const method = req.method === "HEAD" ? "GET" : req.method;
    const deprecation = matches.find((p) => p.route.method === method)?.route.deprecation;
    if (deprecation) res.set(deprecationHeaders(deprecation));
    next();
  });

  router.use(guard(deps));

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
  router.use((_req, res) => sendError(res, new ApiError("not_found")));
  return router;
}

function serve(route: Route, deps: AppDeps): express.RequestHandler {
  return async (req, res) => {
    const result = await route.handle(req, {
      pets: deps.pets,
      clock: deps.clock,
      requestId: res.locals.requestId,
      keyId: (res.locals.apiKey as ApiKey).keyId,
    });
    if (result.headers) res.set(result.headers);
    res.status(result.status).type("application/json").send(result.body);
  };
}
