import { parentPort, workerData } from "node:worker_threads";
import type { SpanContext } from "@opentelemetry/api";
import { ExportResultCode, TraceState } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes, type Resource } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { getOrCreate } from "../get-or-create.ts";
import type { ExportTarget, FromWorker, ToWorker, WireContext, WireSpan } from "./worker-exporter.ts";

/**
 * The worker thread of WorkerSpanExporter (worker-exporter.ts): OpenTelemetry's own OTLP/HTTP
 * exporter, which reads OTEL_EXPORTER_OTLP_* (headers, timeout, compression, certificates) from
 * this process's environment as it would on the main thread, fed the spans the main thread sends.
 */
const { url, protocol } = workerData as ExportTarget;
const exporter = protocol === "http/json" ? new JsonExporter({ url }) : new ProtobufExporter({ url });
const port = parentPort!;

// The serializers group spans by resource and scope object identity: one object per distinct one.
const resources = new Map<string, Resource>();
const scopes = new Map<string, ReadableSpan["instrumentationScope"]>();

const context = ({ traceState, ...rest }: WireContext): SpanContext => ({ ...rest, ...(traceState !== undefined && { traceState: new TraceState(traceState) }) });

function readable({ context: own, parent, links, scope, ...span }: WireSpan, resource: Resource): ReadableSpan {
  const spanContext = context(own);
  return {
    ...span,
    spanContext: () => spanContext,
    ...(parent && { parentSpanContext: context(parent) }),
    links: links.map((link) => ({ ...link, context: context(link.context) })),
    instrumentationScope: getOrCreate(scopes, `${scope.name}@${scope.version ?? ""}:${scope.schemaUrl ?? ""}`, () => scope),
    resource,
  };
}

port.on("message", (message: ToWorker) => {
  const reply = (error?: string) => port.postMessage({ id: message.id, ...(error !== undefined && { error }) } satisfies FromWorker);
  if (message.kind === "shutdown") {
    exporter.shutdown().then(() => reply(), (err: unknown) => reply(String(err)));
    return;
  }
  const { attributes, schemaUrl } = message.resource;
  const resource = getOrCreate(resources, JSON.stringify([attributes, schemaUrl]), () => resourceFromAttributes(attributes, schemaUrl ? { schemaUrl } : {}));
  exporter.export(
    message.spans.map((span) => readable(span, resource)),
    (result) => reply(result.code === ExportResultCode.SUCCESS ? undefined : (result.error?.message ?? "export failed")),
  );
});
