import { readFileSync } from "node:fs";
import { ApiError } from "../../lib/http/errors.ts";
import { jwksOf } from "../../lib/jwks.ts";
import { exposition } from "../../lib/openmetrics.ts";
import type { KeyServiceMetrics } from "./metrics.ts";
import type { Route } from "./route.ts";

export const OPENAPI_PATH = "/openapi.json";
const OPENAPI_JSON = readFileSync(new URL("./openapi.json", import.meta.url), "utf8");

/**
 * What needs no admin token: the public signing keys (RFC 7517), the API description, and the
 * probes and metrics for the orchestrator and Prometheus.
 */
export function opsRoutes(deps: { keysDir: string; metrics: KeyServiceMetrics; readiness: () => Promise<string[]> }): Route[] {
  return [
    {
      method: "get",
      path: "/.well-known/jwks.json",
      handle: (_req, res) => {
        // Public keys may be cached briefly; a retired pair leaves within the minute.
        res.setHeader("Cache-Control", "public, max-age=60");
        res.json(jwksOf(deps.keysDir));
      },
    },
    {
      method: "get",
      path: OPENAPI_PATH,
      handle: (_req, res) => {
        res.type("application/json").send(OPENAPI_JSON);
      },
    },
    { method: "get", path: "/healthz", handle: (_req, res) => void res.json({ status: "ok" }) },
    {
      method: "get",
      path: "/readyz",
      handle: async (_req, res) => {
        const reasons = await deps.readiness();
        if (reasons.length === 0) {
          res.json({ status: "ready" });
          return;
        }
        const err = new ApiError("service_unavailable", `Not ready: ${reasons.join("; ")}.`);
        res.setHeader("Retry-After", "1");
        res.status(err.status).json({ ...err.toBody(), reasons });
      },
    },
    {
      method: "get",
      path: "/metrics",
      handle: async (req, res) => {
        const { contentType, body } = await exposition(deps.metrics.registry, req.headers.accept);
        res.type(contentType).send(body);
      },
    },
  ];
}
