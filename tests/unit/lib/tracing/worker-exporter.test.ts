import { ROOT_CONTEXT, SpanKind, trace, TraceFlags } from "@opentelemetry/api";
import { ExportResultCode, TraceState, type ExportResult } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { TracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkerSpanExporter } from "../../../../lib/tracing/worker-exporter.ts";
import { startOtlpReceiver, type OtlpReceiver } from "../../../../testkit/otlp-receiver.ts";

// A real OTLP/HTTP receiver on loopback; the exporter's worker thread posts to it as it would to a collector.
let receiver: OtlpReceiver;
beforeAll(async () => void (receiver = await startOtlpReceiver()));
afterAll(() => receiver.close());

const caller = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState("vendor=opaque-value") };

/** One finished span, as the SDK hands it to an exporter: a child of a remote caller, with an event and a link. */
function finishedSpan(name: string): ReadableSpan {
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({ resource: resourceFromAttributes({ "service.name": "worker-exporter-test" }), spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
  const span = provider.getTracer("test-scope", "1.2.3").startSpan(name, { kind: SpanKind.SERVER, attributes: { "rpc.method": "ListPets" }, links: [{ context: caller }] }, trace.setSpanContext(ROOT_CONTEXT, caller));
  span.addEvent("store-queried", { rows: 20 });
  span.end();
  return memory.getFinishedSpans()[0]!;
}

const exported = (exporter: WorkerSpanExporter, spans: ReadableSpan[]) => new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));

describe("WorkerSpanExporter", () => {
  it.each(["http/protobuf", "http/json"] as const)("exports a finished span from its worker thread over OTLP/HTTP (%s): ids, parent, kind, attributes, resource, trace state, event", async (protocol) => {
    const exporter = new WorkerSpanExporter({ url: `${receiver.url}/v1/traces`, protocol });
    const name = `exported-${protocol}`;
    const span = finishedSpan(name);
    expect(await exported(exporter, [span])).toEqual({ code: ExportResultCode.SUCCESS });
    await exporter.shutdown();

    const received = receiver.spans().find((s) => s.name === name)!;
    expect(received).toMatchObject({
      service: "worker-exporter-test",
      traceId: caller.traceId,
      spanId: span.spanContext().spanId,
      parentSpanId: caller.spanId,
      kind: 2,
      attributes: { "rpc.method": "ListPets" },
      encoding: protocol === "http/json" ? "json" : "protobuf",
    });
    const body = receiver.rawBodies().find((b) => b.includes(name))!.toString("latin1");
    expect(body).toContain("vendor=opaque-value");
    expect(body).toContain("store-queried");
    expect(body).toContain("test-scope");
  });

  it("sends the batch under way before shutdown ends the thread; an export after it fails at once instead of waiting", async () => {
    const exporter = new WorkerSpanExporter({ url: `${receiver.url}/v1/traces`, protocol: "http/protobuf" });
    const pending = exported(exporter, [finishedSpan("last-before-shutdown")]);
    await exporter.shutdown();
    expect(await pending).toEqual({ code: ExportResultCode.SUCCESS });
    expect(receiver.spans().some((s) => s.name === "last-before-shutdown")).toBe(true);

    const after = await exported(exporter, [finishedSpan("after-shutdown")]);
    expect(after.code).toBe(ExportResultCode.FAILED);
    expect(after.error?.message).toMatch(/worker stopped/);
  });

  it("reports a collector that refuses the batch as a failed export", async () => {
    const exporter = new WorkerSpanExporter({ url: `${receiver.url}/not-a-trace-path`, protocol: "http/protobuf" });
    const result = await exported(exporter, [finishedSpan("refused")]);
    await exporter.shutdown();
    expect(result.code).toBe(ExportResultCode.FAILED);
  });
});
