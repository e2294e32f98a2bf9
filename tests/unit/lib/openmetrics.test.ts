import { trace, TraceFlags } from "@opentelemetry/api";
import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { exemplarHistogram, exposition, latencySeries, prefersOpenMetrics } from "../../../lib/openmetrics.ts";
import { parseExposition } from "../../../testkit/promql.ts";

/** What Prometheus 2.x sends when it scrapes. */
const PROMETHEUS_ACCEPT = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const span = (traceFlags: number) =>
  trace.wrapSpanContext({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags });

function metrics() {
  const registry = new Registry();
  const requests = new Counter({ name: "demo_requests_total", help: "Requests.", labelNames: ["route"], registers: [registry] });
  const latency = exemplarHistogram({ name: "demo_duration_seconds", help: "Latency.", labelNames: ["route"], buckets: [0.1, 1], registers: [registry] });
  return { registry, requests, latency };
}

describe("prefersOpenMetrics", () => {
  it.each<[string | undefined, boolean]>([
    [PROMETHEUS_ACCEPT, true],
    ["application/openmetrics-text", true],
    ["application/openmetrics-text; version=1.0.0", true],
    ["text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5", false],
    ["*/*", false],
    ["text/html,application/xhtml+xml,*/*;q=0.8", false],
    [undefined, false],
  ])("Accept %j → %s", (accept, expected) => {
    expect(prefersOpenMetrics(accept)).toBe(expected);
  });
});

describe("exposition", () => {
  it("shows a sampled span's trace as its bucket's exemplar in OpenMetrics only, never an unsampled one", async () => {
    const { registry, latency } = metrics();
    latencySeries(latency, { route: "/v1/pets" }).observe(0.05, span(TraceFlags.SAMPLED));
    latencySeries(latency, { route: "/v1/pets/:petId" }).observe(0.05, span(TraceFlags.NONE));
    latencySeries(latency, { route: "/v1/pets/:petId" }).observe(0.5, undefined);

    const open = await exposition(registry, PROMETHEUS_ACCEPT);
    expect(open.contentType).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
    const exemplars = open.body.split("\n").filter((l) => l.includes(" # {"));
    expect(exemplars).toEqual([expect.stringMatching(/^demo_duration_seconds_bucket\{le="0\.1",route="\/v1\/pets"\} 1 # \{trace_id="0af7651916cd43dd8448eb211c80319c",span_id="b7ad6b7169203331"\} 0\.05 /)]);
    expect(open.body.endsWith("# EOF\n")).toBe(true);

    const text = await exposition(registry, "*/*");
    expect(text.contentType).toBe(registry.contentType);
    expect(text.body).not.toContain("trace_id");
    // Both label sets counted, whether or not they carry an exemplar.
    const counts = parseExposition(text.body).filter((s) => s.name === "demo_duration_seconds_count");
    expect(counts.map((s) => [s.labels.route, s.value])).toEqual([["/v1/pets", 1], ["/v1/pets/:petId", 2]]);
  });

  it("leaves counter names alone: a Prometheus scrape after an OpenMetrics one still reads demo_requests_total", async () => {
    const { registry, requests } = metrics();
    requests.inc({ route: "/v1/pets" });
    const open = await exposition(registry, "application/openmetrics-text");
    expect(open.body).toContain("# TYPE demo_requests counter");
    expect(open.body).toContain('demo_requests_total{route="/v1/pets"} 1');
    for (const body of [(await exposition(registry, undefined)).body, await registry.metrics()]) {
      expect(body).toContain("# TYPE demo_requests_total counter");
      expect(parseExposition(body).find((s) => s.name === "demo_requests_total")?.value).toBe(1);
    }
  });
});
