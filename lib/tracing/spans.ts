import { context, createContextKey, isSpanContextValid, trace, TraceFlags, type Attributes, type Context, type Span, type SpanKind, type Tracer } from "@opentelemetry/api";

/**
 * The few things both processes do with spans on the request path, kept cheap: without an OTLP
 * endpoint (lib/tracing/start.ts) every span is a non-recording one that only carries ids.
 */

let ours: Tracer | undefined;
/** The tracer of our own spans (one instrumentation scope for both processes); it follows the provider main.ts registers. */
export const tracer = (): Tracer => (ours ??= trace.getTracer("pet-store-api"));

/** The id of the request being handled (X-Request-Id, or the gateway's), beside its span in the context. */
const REQUEST_ID = createContextKey("pet-store request id");

/** `parent` with `span` active and the request's id: what a request's handling runs in. */
export function requestContext(parent: Context, span: Span, requestId: string | undefined): Context {
  const withSpan = trace.setSpan(parent, span);
  return requestId === undefined ? withSpan : withSpan.setValue(REQUEST_ID, requestId);
}

/**
 * pino's mixin: every log line written while a request is handled carries its request id, trace
 * id and the active span's id (sampled or not), so a line leads to the request's other lines,
 * in both processes, and to its trace. A new object each time: pino merges the line's own fields into it.
 */
export function logCorrelation(): Record<string, string> {
  const active = context.active();
  const span = trace.getSpan(active);
  if (!span) return {};
  const ids = span.spanContext();
  if (!isSpanContextValid(ids)) return {};
  const requestId = active.getValue(REQUEST_ID) as string | undefined;
  return requestId === undefined ? { traceId: ids.traceId, spanId: ids.spanId } : { requestId, traceId: ids.traceId, spanId: ids.spanId };
}

/**
 * A span under the active one, or undefined when that one records nothing (an unsampled
 * request, or no endpoint): inner spans of an unrecorded trace would never be exported, so they
 * are not even made. The caller ends it.
 */
export function childSpan(name: string, attributes: Attributes, kind?: SpanKind): Span | undefined {
  if (!trace.getActiveSpan()?.isRecording()) return undefined;
  return tracer().startSpan(name, { attributes, ...(kind !== undefined && { kind }) });
}

/** Whether the trace is sampled: its spans are exported, so an exemplar naming it leads somewhere. */
export function isSampled(span: Span | undefined): span is Span {
  return span !== undefined && (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}
