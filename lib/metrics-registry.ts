import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from "prom-client";
import { exemplarHistogram } from "./openmetrics.ts";

/** Latency buckets (seconds) of both processes, so the gateway's and the pet service's latencies compare directly. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type Unregistered<C> = Omit<C, "registers">;

/**
 * One process's metrics: a registry of its own (not prom-client's global one, so several servers
 * can live in one process, as they do in tests), and metrics made on it.
 */
export interface MetricsRegistry {
  registry: Registry;
  counter<T extends string>(config: Unregistered<CounterConfiguration<T>>): Counter<T>;
  gauge<T extends string>(config: Unregistered<GaugeConfiguration<T>>): Gauge<T>;
  histogram<T extends string>(config: Unregistered<HistogramConfiguration<T>>): Histogram<T>;
  /** A latency histogram on LATENCY_BUCKETS, keeping a trace exemplar per bucket (lib/openmetrics.ts). */
  latency<T extends string>(config: Unregistered<Omit<HistogramConfiguration<T>, "buckets">>): Histogram<T>;
}

/** An HTTP process's request counter and latency histogram by route template, method and status. */
export interface HttpMetrics {
  httpRequests: Counter<"route" | "method" | "status">;
  httpDuration: Histogram<"route" | "method" | "status">;
}

/** `<prefix>_http_requests_total` and `<prefix>_http_request_duration_seconds`; `what` names the requests in the help, `latencyNote` adds to the latency's. */
export function httpMetrics(m: MetricsRegistry, prefix: string, what: string, latencyNote = ""): HttpMetrics {
  const labelNames = ["route", "method", "status"] as const;
  return {
    httpRequests: m.counter({ name: `${prefix}_http_requests_total`, help: `${what} requests by route template, method and status.`, labelNames }),
    httpDuration: m.latency({ name: `${prefix}_http_request_duration_seconds`, help: `${what} request latency by route template, method and status${latencyNote}.`, labelNames }),
  };
}

/** `defaultMetrics` (process CPU, memory, event loop lag, GC…): a process's main only, once per process. */
export function createMetricsRegistry(opts: { defaultMetrics?: boolean } = {}): MetricsRegistry {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    counter: (config) => new Counter({ ...config, registers }),
    gauge: (config) => new Gauge({ ...config, registers }),
    histogram: (config) => new Histogram({ ...config, registers }),
    latency: (config) => exemplarHistogram({ ...config, buckets: LATENCY_BUCKETS, registers }),
  };
}
