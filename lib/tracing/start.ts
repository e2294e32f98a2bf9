import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { defaultResource, detectResources, resourceAttributesEnvDetector, resourceFromAttributes, serviceNameEnvDetector } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from "@opentelemetry/sdk-trace";
import type { SamplerName, TracingSettings } from "./config.ts";
import { W3CPropagator } from "./propagator.ts";
import { WorkerSpanExporter } from "./worker-exporter.ts";

export interface Tracing {
  /** True when spans are recorded and exported (an OTLP endpoint is set). */
  readonly exporting: boolean;
  /** Exports what is queued, then stops the exporter; at shutdown, after the last request. */
  shutdown(): Promise<void>;
}

/** Tracing disabled, or no endpoint: nothing queued, so nothing to flush at shutdown. */
const NOT_EXPORTING: Tracing = Object.freeze({ exporting: false, shutdown: async () => undefined });

/**
 * Tracing for this process, once, at start (main.ts): W3C Trace Context in and out, the active
 * span carried by AsyncLocalStorage, and, with an endpoint, a tracer provider.
 *
 * With an endpoint, spans are sampled as OTEL_TRACES_SAMPLER says (parent-based by default, so a
 * client's sampled flag is honoured), batched (OTEL_BSP_*) and exported over OTLP/HTTP from a
 * worker thread (worker-exporter.ts); every
 * request gets ids, sampled or not. Without one, no tracer provider: a client's trace is continued
 * with a span id of each process's own (startServerSpan; both processes log its trace id, the pet
 * service gets its traceparent) and a request that came without one has no ids at all, since no backend
 * would ever hold its trace (its requestId joins both processes' lines, as before tracing): the
 * process pays for propagation only (docs/performance.md, Tracing and TLS cost, measured it at +15–30 µs per
 * request with ids of our own). (The OpenTelemetry default would export to localhost:4318.) With
 * OTEL_SDK_DISABLED=true, not even propagation.
 */
export function startTracing(serviceName: string, settings: TracingSettings): Tracing {
  // OTEL_SDK_DISABLED=true: nothing registered, so the API's no-ops answer (no context carried,
  // no ids, no traceparent): the request path costs what it did before tracing.
  if (settings.disabled) return NOT_EXPORTING;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CPropagator());
  const { url } = settings;
  if (!url) return NOT_EXPORTING;
  const exporter = new WorkerSpanExporter({ url, protocol: settings.protocol });
  const provider = new TracerProvider({
    // The process's own name unless OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) says otherwise.
    resource: defaultResource()
      .merge(resourceFromAttributes({ "service.name": serviceName }))
      .merge(detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] })),
    sampler: samplerOf(settings.sampler, settings.ratio),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...settings.batch })],
  });
  trace.setGlobalTracerProvider(provider);
  return { exporting: true, shutdown: () => provider.shutdown() };
}

function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio);
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}
