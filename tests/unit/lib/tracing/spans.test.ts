import { context, ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { startServerSpan } from "../../../../lib/tracing/spans.ts";

// No tracer provider is registered here: the API's no-op tracer, as in a process without an OTLP endpoint.
const callerSpanContext = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true };

describe("startServerSpan without a tracer provider", () => {
  it("continues the caller's trace with a span id of its own, flags kept, recording nothing", () => {
    const span = startServerSpan("GET", trace.setSpanContext(ROOT_CONTEXT, callerSpanContext));
    const own = span.spanContext();
    expect(own.traceId).toBe(callerSpanContext.traceId);
    expect(own.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(own.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(own.spanId).not.toBe(callerSpanContext.spanId);
    expect(own.isRemote).toBe(false);
    expect(span.isRecording()).toBe(false);
  });

  it("gives two requests of one caller span two span ids", () => {
    const parent = trace.setSpanContext(ROOT_CONTEXT, callerSpanContext);
    expect(startServerSpan("GET", parent).spanContext().spanId).not.toBe(startServerSpan("GET", parent).spanContext().spanId);
  });

  it("gives a request without a caller's trace no ids", () => {
    expect(trace.isSpanContextValid(startServerSpan("GET", context.active()).spanContext())).toBe(false);
  });
});
