import { trace, type Context, type TextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

/**
 * W3C Trace Context, with an extracted trace id copied into a string of its own. The parser's
 * match is a view of the `traceparent` header (V8 keeps a substring of 13 characters or more as
 * a slice of its parent), a kind of string nothing else the pet service logs is. It was the
 * fifth kind at pino's escaping, whose property loads V8 keeps inline for four, so they turned
 * megamorphic for every line's ids (docs/performance.md, Tracing and TLS cost). Hex in, hex out: the copy is
 * a plain string, as the ids the SDK makes are. The span context is the one the parser has just
 * made for this call, so the copy goes into it rather than into a second context.
 */
export class W3CPropagator extends W3CTraceContextPropagator {
  override extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    const extracted = super.extract(context, carrier, getter);
    const remote = extracted === context ? undefined : trace.getSpanContext(extracted);
    if (remote !== undefined) remote.traceId = Buffer.from(remote.traceId, "hex").toString("hex");
    return extracted;
  }
}
