import { context, createContextKey, INVALID_TRACEID, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Attributes, type Context, type Span, type TimeInput, type Tracer } from "@opentelemetry/api";
import { RandomIdGenerator } from "@opentelemetry/sdk-trace";

/**
 * The few things both processes do with spans on the request path, kept cheap: without an OTLP
 * endpoint (lib/tracing/start.ts) every span is a non-recording one that only carries ids.
 */

let ours: Tracer | undefined;
/** The tracer of our own spans (one instrumentation scope for both processes); it follows the provider main.ts registers. */
const tracer = (): Tracer => (ours ??= trace.getTracer("pet-store-api"));

/**
 * Span ids as the SDK makes them (Math.random into one shared buffer): a span id needs to be
 * unique, not secret, and crypto.randomBytes(8), 1.7 µs in a loop, cost both processes together
 * about 20 CPU-µs more per request in a live stack (docs/performance.md, Tracing and TLS cost).
 */
const idGenerator = new RandomIdGenerator();

/**
 * The SERVER span of a request or call under `parent` (the caller's context, extracted). With no
 * tracer provider (no endpoint) the API's no-op tracer hands back the caller's span context
 * itself: this process then takes a span id of its own within the caller's trace, so its log
 * lines, and the traceparent it passes on, name its own work, never the caller's span.
 */
export function startServerSpan(name: string, parent: Context): Span {
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER }, parent);
  const caller = trace.getSpanContext(parent);
  if (caller === undefined || span.spanContext().spanId !== caller.spanId) return span;
  return trace.wrapSpanContext({ ...caller, spanId: idGenerator.generateSpanId(), isRemote: false });
}

/** The id of the request being handled (X-Request-Id, or the gateway's), beside its span in the context. */
const REQUEST_ID = createContextKey("pet-store request id");

/**
 * What a request's handling runs in: its request id and `span` (a child of the caller's, started
 * by the caller) active. The caller's context holds nothing else we use, so both go on an empty
 * one (the copies contexts make per value stay small; a WeakMap from span to id cost more, in GC).
 */
export function requestContext(span: Span, requestId: string | undefined): Context {
  return trace.setSpan(requestId === undefined ? ROOT_CONTEXT : ROOT_CONTEXT.setValue(REQUEST_ID, requestId), span);
}

/** A log record's trace fields: both set, or both undefined (pino leaves undefined fields out). */
export interface LogIds {
  traceId: string | undefined;
  spanId: string | undefined;
}
const NO_IDS: LogIds = Object.freeze({ traceId: undefined, spanId: undefined });

/**
 * A span's trace and span ids, or NO_IDS when it has none (tracing disabled, or no endpoint and
 * no client traceparent). Always both keys, so the records built from them keep one shape: a
 * record with the ids spread in, or without them, made pino's serialiser slower for every line
 * (docs/performance.md, Tracing and TLS cost).
 */
export function idsOf(span: Span | undefined): LogIds {
  const ids = span?.spanContext();
  return ids === undefined || ids.traceId === INVALID_TRACEID ? NO_IDS : { traceId: ids.traceId, spanId: ids.spanId };
}

/**
 * pino's mixin: every log line written while a request is handled carries its request id and,
 * when the request has a trace (always with an OTLP endpoint, sampled or not; without one, when
 * the client sent a traceparent), the trace id and the active span's id, so a line leads to the
 * request's other lines, in both processes, and to its trace. A new object each time, of one
 * shape: pino merges the line's own fields into it.
 */
export function logCorrelation(): { requestId: string | undefined } & LogIds {
  const active = context.active();
  const { traceId, spanId } = idsOf(trace.getSpan(active));
  return { requestId: active.getValue(REQUEST_ID) as string | undefined, traceId, spanId };
}

/**
 * A span under the active one, or undefined when that one records nothing (an unsampled
 * request, or no endpoint): inner spans of an unrecorded trace would never be exported, so they
 * are not even made. The caller ends it.
 */
export function childSpan(name: string, attributes: Attributes, kind?: SpanKind, startTime?: TimeInput): Span | undefined {
  if (!trace.getActiveSpan()?.isRecording()) return undefined;
  return tracer().startSpan(name, { attributes, ...(kind !== undefined && { kind }), ...(startTime !== undefined && { startTime }) });
}

/** Whether the trace is sampled: its spans are exported, so an exemplar naming it leads somewhere. */
export function isSampled(span: Span | undefined): span is Span {
  return span !== undefined && (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}
