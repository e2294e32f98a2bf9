import { trace, TraceFlags } from "@opentelemetry/api";
import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMetricsRegistry, LATENCY_BUCKETS } from "../../../lib/metrics-registry.ts";
import { exposition, latencySeries } from "../../../lib/openmetrics.ts";
import { parseExposition } from "../../../testkit/promql.ts";

const OPENMETRICS = "application/openmetrics-text; version=1.0.0";

describe("createMetricsRegistry", () => {
  it("keeps each process's metrics apart: two registries in one process hold the same names without clashing, and none reaches prom-client's global registry", async () => {
    const [a, b] = [createMetricsRegistry(), createMetricsRegistry()];
    const requests = [a, b].map((m) => m.counter({ name: "demo_requests_total", help: "Requests.", labelNames: ["route"] }));
    requests[0]!.inc({ route: "/v1/pets" }, 2);
    requests[1]!.inc({ route: "/v1/pets" }, 5);
    const value = async (registry: typeof a.registry) =>
      parseExposition(await registry.metrics()).find((s) => s.name === "demo_requests_total")?.value;
    expect(await value(a.registry)).toBe(2);
    expect(await value(b.registry)).toBe(5);
    expect(globalRegistry.getSingleMetric("demo_requests_total")).toBeUndefined();
  });

  it("gives every latency histogram the shared buckets and a sampled request's trace as its bucket's exemplar", async () => {
    const m = createMetricsRegistry();
    const latency = m.latency({ name: "demo_duration_seconds", help: "Latency.", labelNames: ["route"] });
    const span = trace.wrapSpanContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED });
    latencySeries(latency, { route: "/v1/pets" }).observe(0.003, span);
    const { body } = await exposition(m.registry, OPENMETRICS);
    const bounds = parseExposition(body)
      .filter((s) => s.name === "demo_duration_seconds_bucket")
      .map((s) => s.labels.le);
    expect(bounds).toEqual([...LATENCY_BUCKETS.map(String), "+Inf"]);
    expect(body).toMatch(/demo_duration_seconds_bucket\{le="0.005",route="\/v1\/pets"\} 1 # \{trace_id="0af7651916cd43dd8448eb211c80319c",span_id="b7ad6b7169203331"\} 0.003/);
  });

  it("collects the process metrics only when asked (once per process: the main's registry)", async () => {
    const names = async (defaultMetrics: boolean) => (await createMetricsRegistry({ defaultMetrics }).registry.getMetricsAsJSON()).map((metric) => metric.name);
    expect(await names(false)).toEqual([]);
    expect(await names(true)).toEqual(expect.arrayContaining(["process_cpu_seconds_total", "nodejs_version_info"]));
  });
});
