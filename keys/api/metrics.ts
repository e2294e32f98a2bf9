import type { Counter, Gauge, Registry } from "prom-client";
import { createMetricsRegistry, httpMetrics, type HttpMetrics } from "../../lib/metrics-registry.ts";

/** The key service's Prometheus metrics, on a registry of their own (lib/metrics-registry.ts). */
export interface KeyServiceMetrics extends HttpMetrics {
  registry: Registry;
  /** The highest seq of the events table this replica has seen; read at each scrape from what followEvents names. */
  eventsHead: Gauge;
  followEvents(head: () => number): void;
  /** Long polls of GET /v1/events waiting now. */
  longPolls: Gauge;
  /** Webhook delivery attempts by outcome: delivered, failed (to be retried), given_up. */
  webhookDeliveries: Counter<"outcome">;
  /** Read at each scrape from what followWebhooks names: the oldest undelivered event's age (ms). */
  followWebhooks(oldestPendingMs: () => number): void;
  /** POST /v1/usage/reports by outcome: applied, duplicate (a retry of one applied), rejected. */
  usageReports: Counter<"outcome">;
}

export function createKeyServiceMetrics(opts: { defaultMetrics?: boolean } = {}): KeyServiceMetrics {
  const m = createMetricsRegistry(opts);
  let head = () => 0;
  let oldestPendingMs = () => 0;
  const webhookDeliveries = m.counter({
    name: "keys_webhook_deliveries_total",
    help: "Webhook delivery attempts by outcome: delivered, failed (retried later), given_up (failing 24 h; the next event goes).",
    labelNames: ["outcome"],
  });
  // Every outcome from 0, so "failing and none delivered" alerts read a series that exists.
  for (const outcome of ["delivered", "failed", "given_up"]) webhookDeliveries.labels(outcome).inc(0);
  m.gauge({
    name: "keys_webhook_oldest_pending_seconds",
    help: "Age of the oldest event this replica has yet to deliver to a subscription it delivers (0: none waiting).",
    collect() {
      this.set(oldestPendingMs() / 1000);
    },
  });
  return {
    registry: m.registry,
    ...httpMetrics(m, "keys", "Admin API", " (long polls included: they last up to their wait)"),
    eventsHead: m.gauge({
      name: "keys_events_head_seq",
      help: "The highest seq of the events table this replica has read.",
      collect() {
        this.set(head());
      },
    }),
    followEvents: (source) => void (head = source),
    longPolls: m.gauge({ name: "keys_events_long_polls", help: "GET /v1/events long polls waiting now." }),
    webhookDeliveries,
    followWebhooks: (source) => void (oldestPendingMs = source),
    usageReports: m.counter({
      name: "keys_usage_reports_total",
      help: "Gateways' usage reports by outcome: applied, duplicate (a retried report already applied: counted once), rejected (not a report, or the registry could not take it).",
      labelNames: ["outcome"],
    }),
  };
}
