import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { createMetricsRegistry } from "../../lib/metrics-registry.ts";

/** The gateway's Prometheus metrics, on a registry of their own (lib/metrics-registry.ts). */
export interface GatewayMetrics {
  registry: Registry;
  httpRequests: Counter<"route" | "method" | "status">;
  httpDuration: Histogram<"route" | "method" | "status">;
  limiterDecisions: Counter<"plan" | "outcome">;
  redisFaults: Counter;
  limiterFallback: Gauge;
  grpcDuration: Histogram<"method" | "code">;
  grpcRetries: Counter<"method">;
  /** 1 while the pet service answers this gateway's grpc.health check with SERVING, else 0; asked at each scrape. */
  petServiceServing: Gauge;
  /** Sets the check petServiceServing runs at scrape time (createGateway: the readiness health check). */
  probePetService(serving: () => Promise<boolean>): void;
}

export function createGatewayMetrics(opts: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const m = createMetricsRegistry(opts);
  let probe: (() => Promise<boolean>) | undefined;
  return {
    registry: m.registry,
    httpRequests: m.counter({
      name: "gateway_http_requests_total",
      help: "HTTP requests by route template, method and status.",
      labelNames: ["route", "method", "status"],
    }),
    httpDuration: m.latency({
      name: "gateway_http_request_duration_seconds",
      help: "HTTP request latency by route template, method and status.",
      labelNames: ["route", "method", "status"],
    }),
    limiterDecisions: m.counter({
      name: "gateway_limiter_decisions_total",
      help: "Rate-limiter decisions by plan in force (free, pro, business, enterprise; anonymous without a valid key) and outcome (admitted, limited, banned, revoked, rolled, unavailable).",
      labelNames: ["plan", "outcome"],
    }),
    redisFaults: m.counter({
      name: "gateway_redis_faults_total",
      help: "Limiter calls to Redis that failed and were decided from process memory.",
    }),
    limiterFallback: m.gauge({
      name: "gateway_limiter_fallback_active",
      help: "1 while the limiter decides from process memory because Redis is unavailable.",
    }),
    grpcDuration: m.latency({
      name: "gateway_grpc_client_duration_seconds",
      help: "Calls to the pet service by RPC method and gRPC status code.",
      labelNames: ["method", "code"],
    }),
    grpcRetries: m.counter({
      name: "gateway_grpc_client_retries_total",
      help: "Calls to the pet service tried again on another replica after UNAVAILABLE, by RPC method.",
      labelNames: ["method"],
    }),
    // Asked when scraped rather than kept up to date: fresh whatever the probe interval, and no
    // traffic to the pet service when nobody looks (alert: PetServiceNotServing).
    petServiceServing: m.gauge({
      name: "gateway_pet_service_serving",
      help: "1 while the pet service reports SERVING to this gateway's grpc.health check (as /readyz uses it), else 0.",
      async collect() {
        if (probe) this.set((await probe()) ? 1 : 0);
      },
    }),
    probePetService(serving) {
      probe = serving;
    },
  };
}
