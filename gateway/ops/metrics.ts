import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { FallbackMetrics } from "../limiter/fallback-store.ts";
import { createMetricsRegistry, httpMetrics, type HttpMetrics } from "../../lib/metrics-registry.ts";

/** The gateway's Prometheus metrics, on a registry of their own (lib/metrics-registry.ts). */
export interface GatewayMetrics extends HttpMetrics {
  registry: Registry;
  limiterDecisions: Counter<"plan" | "outcome">;
  redisFaults: Counter;
  limiterFallback: Gauge;
  limiterAmbiguous: Counter<"reason" | "answer">;
  limiterRedisDuration: Histogram;
  grpcDuration: Histogram<"method" | "code">;
  grpcRetries: Counter<"method">;
  /** 1 while the pet service answers this gateway's grpc.health check with SERVING, else 0; asked at each scrape. */
  petServiceServing: Gauge;
  /** Sets the check petServiceServing runs at scrape time (createGateway: the readiness health check). */
  probePetService(serving: () => Promise<boolean>): void;
  /** Usage reports to the key service by outcome: sent (202), failed (retried), rejected (400/413: dropped). */
  usageReports: Counter<"outcome">;
  /** Key-hours of usage counted and not acknowledged by the key service; read at each scrape from what followUsageBacklog names. */
  usageBacklog: Gauge;
  followUsageBacklog(backlog: () => number): void;
  /** Requests whose usage was dropped: past the backlog's bound, or in a report the key service refused. */
  usageDropped: Counter;
  /** 1 while the key service answers this gateway's change feed, else 0 (read at each scrape). */
  keyServiceFollowed: Gauge;
  /** Sets what keyServiceFollowed reads (createGateway: the feed). */
  probeKeyFeed(following: () => boolean): void;
}

/** Finer around the values REDIS_COMMAND_TIMEOUT_MS is chosen among. */
const REDIS_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2];

/** The limiter's share of the gateway's metrics (create-limiter.ts). */
export const limiterMetrics = (m: GatewayMetrics): FallbackMetrics => ({
  faults: m.redisFaults,
  fallbackActive: m.limiterFallback,
  ambiguous: m.limiterAmbiguous,
  redisDuration: m.limiterRedisDuration,
});

export function createGatewayMetrics(opts: { defaultMetrics?: boolean } = {}): GatewayMetrics {
  const m = createMetricsRegistry(opts);
  let probe: (() => Promise<boolean>) | undefined;
  let backlog = () => 0;
  let following: (() => boolean) | undefined;
  return {
    registry: m.registry,
    ...httpMetrics(m, "gateway", "HTTP"),
    limiterDecisions: m.counter({
      name: "gateway_limiter_decisions_total",
      help: "Rate-limiter decisions by plan in force (free, pro, business, enterprise; anonymous without a valid key) and outcome (admitted, limited, banned, revoked, rolled, unavailable).",
      labelNames: ["plan", "outcome"],
    }),
    redisFaults: m.counter({
      name: "gateway_redis_faults_total",
      help: "Limiter calls to Redis that failed: decided from process memory, or refused with 503 when not answered in time (gateway_limiter_ambiguous_decisions_total).",
    }),
    limiterFallback: m.gauge({
      name: "gateway_limiter_fallback_active",
      help: "1 while the limiter decides from process memory because Redis is unavailable.",
    }),
    limiterAmbiguous: m.counter({
      name: "gateway_limiter_ambiguous_decisions_total",
      help: "Limiter decisions sent to Redis whose reply never came, so the script may have counted them, by reason (timeout: not within REDIS_COMMAND_TIMEOUT_MS; connection_lost) and answer (unavailable: 503 with Retry-After; memory: decided from process memory, in an outage or on a lone gateway).",
      labelNames: ["reason", "answer"],
    }),
    limiterRedisDuration: m.histogram({
      name: "gateway_limiter_redis_duration_seconds",
      help: "Time from a limiter decision sent to Redis to its reply, as this gateway sees it (event-loop delays included): set REDIS_COMMAND_TIMEOUT_MS well above its tail.",
      buckets: REDIS_BUCKETS,
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
    usageReports: m.counter({
      name: "gateway_usage_reports_total",
      help: "Usage reports sent to the key service by outcome: sent (acknowledged), failed (kept and sent again), rejected (refused as malformed: its counts dropped).",
      labelNames: ["outcome"],
    }),
    usageBacklog: m.gauge({
      name: "gateway_usage_backlog",
      help: "Key-hours of usage counted by this gateway and not yet acknowledged by the key service.",
      collect() {
        this.set(backlog());
      },
    }),
    followUsageBacklog: (source) => void (backlog = source),
    usageDropped: m.counter({
      name: "gateway_usage_dropped_total",
      help: "Requests left out of the usage history: counted past the backlog's bound during a key-service outage, or in a report the key service refused.",
    }),
    // An outage of the key service leaves the gateway ready (it serves from its last key state):
    // this says so, for an alert while changes (revocations) are not reaching it.
    keyServiceFollowed: m.gauge({
      name: "gateway_key_service_following",
      help: "1 while this gateway's change feed gets answers from the key service (KEYS_URL), else 0: it then serves from its last key state.",
      collect() {
        if (following) this.set(following() ? 1 : 0);
      },
    }),
    probeKeyFeed(fn) {
      following = fn;
    },
  };
}
