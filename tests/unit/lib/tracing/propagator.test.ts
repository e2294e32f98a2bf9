import { defaultTextMapGetter, ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { W3CPropagator } from "../../../../lib/tracing/propagator.ts";

const ours = new W3CPropagator();
const extract = (headers: Record<string, string>) => ours.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);

describe("W3CPropagator", () => {
  it("extracts the caller's trace id, span id, flags and tracestate", () => {
    const headers = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "vendor=abc" };
    const got = trace.getSpanContext(extract(headers))!;
    expect(got).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true });
    expect(got.traceState?.serialize()).toBe("vendor=abc");
  });

  it("leaves the context as it was for a missing or malformed traceparent", () => {
    const malformed: Record<string, string>[] = [{}, { traceparent: "00-zzzz-b7ad6b7169203331-01" }, { traceparent: "00-00000000000000000000000000000000-b7ad6b7169203331-01" }];
    for (const headers of malformed) {
      expect(extract(headers)).toBe(ROOT_CONTEXT);
    }
  });
});
