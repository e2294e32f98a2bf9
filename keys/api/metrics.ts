import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { createMetricsRegistry } from "../../lib/metrics-registry.ts";

/** The key service's Prometheus metrics, on a registry of their own (lib/metrics-registry.ts). */
export interface KeyServiceMetrics {
  registry: Registry;
  httpRequests: Counter<"route" | "method" | "status">;
  httpDuration: Histogram<"route" | "method" | "status">;
  /** The highest seq of the events table this replica has seen; read at each scrape from what followEvents names. */
  eventsHead: Gauge;
  followEvents(head: () => number): void;
  /** Long polls of GET /v1/events waiting now. */
  longPolls: Gauge;
  /** POST /v1/usage/reports by outcome: applied, duplicate (a retry of one applied), rejected. */
  usageReports: Counter<"outcome">;
}

export function createKeyServiceMetrics(opts: { defaultMetrics?: boolean } = {}): KeyServiceMetrics {
  const m = createMetricsRegistry(opts);
  let head = () => 0;
  return {
    registry: m.registry,
    httpRequests: m.counter({
      name: "keys_http_requests_total",
      help: "Admin API requests by route template, method and status.",
      labelNames: ["route", "method", "status"],
    }),
    httpDuration: m.latency({
      name: "keys_http_request_duration_seconds",
      help: "Admin API latency by route template, method and status (long polls included: they last up to their wait).",
      labelNames: ["route", "method", "status"],
    }),
    eventsHead: m.gauge({
      name: "keys_events_head_seq",
      help: "The highest seq of the events table this replica has read.",
      collect() {
        this.set(head());
      },
    }),
    followEvents: (source) => void (head = source),
    longPolls: m.gauge({ name: "keys_events_long_polls", help: "GET /v1/events long polls waiting now." }),
    usageReports: m.counter({
      name: "keys_usage_reports_total",
      help: "Gateways' usage reports by outcome: applied, duplicate (a retried report already applied: counted once), rejected (not a report, or the registry could not take it).",
      labelNames: ["outcome"],
    }),
  };
}
