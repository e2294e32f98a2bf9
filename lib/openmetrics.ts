import type { Span } from "@opentelemetry/api";
import Negotiator from "negotiator";
import { Histogram, Registry, type HistogramConfiguration, type LabelValues, type Metric, type OpenMetricsContentType } from "prom-client";
import { isSampled } from "./tracing/spans.ts";

/**
 * Latency histograms with trace exemplars, and /metrics in either exposition format: the
 * Prometheus text format by default, OpenMetrics (which alone carries exemplars) when the scraper
 * asks for it, as Prometheus does in its Accept header.
 */

/**
 * A latency histogram that keeps an exemplar per bucket. Its registries stay in the Prometheus
 * text format (their metrics() and contentType as before, exemplars left out), which prom-client
 * refuses at construction for a histogram with exemplars; it is registered after construction
 * instead, and exposition() shows the exemplars to a scraper that asks for OpenMetrics.
 */
export function exemplarHistogram<T extends string>({ registers = [], ...config }: HistogramConfiguration<T>): Histogram<T> {
  const histogram = new Histogram<T>({ ...config, enableExemplars: true, registers: [] });
  for (const registry of registers) registry.registerMetric(histogram);
  return histogram;
}

/** One label set of a latency histogram (exemplarHistogram). */
export interface LatencySeries {
  /**
   * Counts `seconds`; when `span` is sampled, its trace becomes the bucket's exemplar. The span is
   * named, never looked up here: callbacks of sockets and drivers may run outside the request's context.
   */
  observe(seconds: number, span: Span | undefined): void;
}

/**
 * Exemplars come from sampled spans only, as OpenTelemetry's default exemplar filter
 * (trace_based) has it: an exemplar names a trace the tracing backend holds, and an unsampled
 * request costs the plain observation alone.
 */
export function latencySeries<T extends string>(histogram: Histogram<T>, labels: LabelValues<T>): LatencySeries {
  const series = histogram.labels(labels);
  return {
    observe(seconds, span) {
      if (!isSampled(span)) {
        series.observe(seconds);
        return;
      }
      const { traceId, spanId } = span.spanContext();
      // prom-client's typings give exemplar labels the histogram's label names; any names are valid.
      const exemplarLabels = { trace_id: traceId, span_id: spanId } as unknown as LabelValues<T>;
      histogram.observe({ labels, value: seconds, exemplarLabels });
    },
  };
}

const PROMETHEUS_TEXT = "text/plain; version=0.0.4";
const OPENMETRICS_TEXT = "application/openmetrics-text; version=1.0.0";

/** Whether an Accept header prefers OpenMetrics 1.0 to the Prometheus text format (q-values honoured). */
export function prefersOpenMetrics(accept: string | undefined): boolean {
  return accept !== undefined && new Negotiator({ headers: { accept } }).mediaType([PROMETHEUS_TEXT, OPENMETRICS_TEXT]) === OPENMETRICS_TEXT;
}

/**
 * The registry's metrics in the format `accept` prefers. For OpenMetrics, prom-client renames
 * every counter it renders (drops `_total` from the metric object itself, prometheus/client_js
 * #829), which would take `_total` off the next Prometheus-format scrape: each counter is rendered
 * through an object of its own that shares its values.
 */
export async function exposition(registry: Registry, accept: string | undefined): Promise<{ contentType: string; body: string }> {
  if (!prefersOpenMetrics(accept)) return { contentType: registry.contentType, body: await registry.metrics() };
  const view = new Registry<OpenMetricsContentType>();
  view.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  for (const metric of registry.getMetricsAsArray() as unknown as (Metric & { type: string })[]) {
    view.registerMetric(metric.type === "counter" ? (Object.create(metric) as Metric) : metric);
  }
  return { contentType: view.contentType, body: await view.metrics() };
}
