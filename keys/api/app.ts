import express, { type Request, type Response } from "express";
import type { Clock } from "../../lib/clock.ts";
import { docsRouter } from "../../lib/http/docs.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { handleErrors, sendError } from "../../lib/http/error-response.ts";
import { requestContext } from "../../lib/http/request-context.ts";
import type { Logger } from "../../lib/logger.ts";
import type { FeedFollower } from "../feed/follower.ts";
import type { KeyOperations } from "../operations/index.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { accessLog } from "./access-log.ts";
import { adminTokenRoutes } from "./admin-token-routes.ts";
import { requireScope } from "./auth.ts";
import { jsonBody } from "./body.ts";
import { keyServiceError } from "./error-mapping.ts";
import { eventsRoutes } from "./events-routes.ts";
import { keyRoutes } from "./key-routes.ts";
import { createSignups } from "../signups/signups.ts";
import { signupRoutes } from "./signup-routes.ts";
import type { KeyServiceMetrics } from "./metrics.ts";
import { usageReader } from "./usage.ts";
import { webhookRoutes } from "./webhook-routes.ts";
import { usageHistoryRoutes } from "./usage-history-routes.ts";
import { OPENAPI_PATH, opsRoutes } from "./ops-routes.ts";
import type { Route } from "./route.ts";

export interface AdminApiDeps {
  registry: KeyRegistry;
  operations: KeyOperations;
  follower: FeedFollower;
  keysDir: string;
  redisUrl?: string | undefined;
  clock: Clock;
  logger: Logger;
  metrics: KeyServiceMetrics;
  /** Why the key service should not get traffic now (registry unreachable, shutting down); empty when ready. */
  readiness: () => Promise<string[]>;
}

const NOT_FOUND = new ApiError("not_found");

/** The admin API's Express app (DESIGN, Key service). It does not listen: keys/main.ts and tests do. */
export function createAdminApp(deps: AdminApiDeps): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(requestContext());
  app.use(accessLog(deps));

  const routes: Route[] = [
    ...keyRoutes({ ...deps, usage: usageReader(deps) }),
    ...usageHistoryRoutes(deps),
    ...eventsRoutes(deps),
    ...adminTokenRoutes(deps),
    ...webhookRoutes(deps),
    ...opsRoutes(deps),
  ];
  routes.push(...signupRoutes({ signups: createSignups(deps), follower: deps.follower }));
  const router = express.Router({ caseSensitive: true, strict: false });
  for (const route of routes) {
    const label: express.RequestHandler = (_req, res, next) => {
      res.locals.route = route.path.replace(/:([A-Za-z]+)/g, "{$1}");
      next();
    };
    const handlers: express.RequestHandler[] = [label];
    if (route.scopes) handlers.push(requireScope(deps.registry, ...route.scopes));
    if (route.body) handlers.push(jsonBody(route.body, route.bodyLimitBytes));
    router[route.method](route.path, ...handlers, route.handle);
  }
  // A known path with another method: 405 naming the allowed ones.
  for (const path of new Set(routes.map((r) => r.path))) {
    const allowed = routes.filter((r) => r.path === path).flatMap((r) => (r.method === "get" ? ["GET", "HEAD"] : [r.method.toUpperCase()]));
    router.all(path, (_req, res) => {
      res.setHeader("Allow", allowed.join(", "));
      sendError(res, new ApiError("method_not_allowed", `Allowed methods: ${allowed.join(", ")}.`));
    });
  }
  app.use(router);
  app.use(docsRouter({ title: "Pet Store key service: admin API reference", openapiPath: OPENAPI_PATH }));
  app.use((_req: Request, res: Response) => sendError(res, NOT_FOUND));
  app.use(handleErrors(deps.logger, keyServiceError));
  return app;
}
