import express from "express";
import { exposition } from "../../lib/openmetrics.ts";
import { ApiError } from "../../lib/http/errors.ts";
import type { GatewayMetrics } from "./metrics.ts";

export interface OpsDeps {
  metrics: GatewayMetrics;
  /** Why the gateway should not get traffic now; empty when ready. */
  readiness: () => Promise<string[]>;
}

/**
 * Probes and metrics for operators, outside /v1: no auth, no quota. Expose only /v1 publicly
 * (deploy/README.md); these are for the orchestrator and Prometheus.
 */
export function opsRouter(deps: OpsDeps): express.Router {
  const router = express.Router();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    const reasons = await deps.readiness();
    if (reasons.length === 0) {
      res.json({ status: "ready" });
      return;
    }
    const err = new ApiError("service_unavailable", `Not ready: ${reasons.join("; ")}.`);
    res.status(err.status).json({ ...err.toBody(), reasons });
  });
  // The Prometheus text format, or OpenMetrics (with trace exemplars) when the scraper prefers it.
  router.get("/metrics", async (req, res) => {
    const { contentType, body } = await exposition(deps.metrics.registry, req.headers.accept);
    res.type(contentType).send(body);
  });
  return router;
}
