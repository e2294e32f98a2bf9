import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "../../../../gateway/config.ts";
import { loadConfig } from "../../../../pet-service/config.ts";
import { ConfigError } from "../../../../lib/config.ts";
import { tracingSettings } from "../../../../lib/tracing/config.ts";

// The standard OTEL_* variables, read by both processes through their configuration schemas.
const gateway = (env: Record<string, string>) => tracingSettings(loadGatewayConfig(env));
const petService = (env: Record<string, string>) => loadConfig(env).tracing;

describe.each([
  ["gateway", gateway],
  ["pet-service", petService],
])("%s: OTEL_* variables", (_process, settings) => {
  it("exports nothing without an endpoint; parent-based sampling of every trace and protobuf by default", () => {
    expect(settings({})).toEqual({ protocol: "http/protobuf", sampler: "parentbased_always_on", ratio: 1, batch: {} });
  });

  it("sends to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, or to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given", () => {
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).url).toBe("http://collector:4318/v1/traces");
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/otlp/" }).url).toBe("http://collector:4318/otlp/v1/traces");
    expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://b/traces" }).url).toBe("https://b/traces");
  });

  it("exports nothing when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, endpoint or not; only the first disables tracing", () => {
    const pick = ({ disabled, url }: ReturnType<typeof settings>) => ({ disabled, url });
    expect(pick(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "TRUE" }))).toEqual({ disabled: true, url: undefined });
    expect(pick(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }))).toEqual({ disabled: undefined, url: undefined });
    expect(pick(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "false" }))).toEqual({ disabled: undefined, url: "http://c:4318/v1/traces" });
  });

  it("takes http/json from OTEL_EXPORTER_OTLP_PROTOCOL, the traces-specific variable first", () => {
    expect(settings({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }).protocol).toBe("http/json");
    expect(settings({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" }).protocol).toBe("http/protobuf");
  });

  it("takes the sampler, its ratio and the batch settings", () => {
    expect(
      settings({
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.01",
        OTEL_BSP_SCHEDULE_DELAY: "200",
        OTEL_BSP_EXPORT_TIMEOUT: "1000",
        OTEL_BSP_MAX_QUEUE_SIZE: "4096",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1024",
      }),
    ).toMatchObject({
      sampler: "parentbased_traceidratio",
      ratio: 0.01,
      batch: { scheduledDelayMillis: 200, exportTimeoutMillis: 1000, maxQueueSize: 4096, maxExportBatchSize: 1024 },
    });
  });

  it.each([
    ["OTEL_EXPORTER_OTLP_PROTOCOL", { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }],
    ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/proto" }],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }],
    ["OTEL_TRACES_SAMPLER", { OTEL_TRACES_SAMPLER: "traceratio" }],
    ["OTEL_TRACES_SAMPLER_ARG", { OTEL_TRACES_SAMPLER_ARG: "1.5" }],
    ["OTEL_TRACES_SAMPLER_ARG", { OTEL_TRACES_SAMPLER_ARG: "ten percent" }],
    ["OTEL_TRACES_EXPORTER", { OTEL_TRACES_EXPORTER: "zipkin" }],
    ["OTEL_BSP_MAX_QUEUE_SIZE", { OTEL_BSP_MAX_QUEUE_SIZE: "0" }],
    ["OTEL_BSP_SCHEDULE_DELAY", { OTEL_BSP_SCHEDULE_DELAY: "-1" }],
    ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", { OTEL_BSP_MAX_QUEUE_SIZE: "100", OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512" }],
    ["OTEL_EXPORTER_OTLP_COMPRESSION", { OTEL_EXPORTER_OTLP_COMPRESSION: "zstd" }],
  ])("refuses a bad %s with one line naming it", (variable, env) => {
    expect(() => settings(env)).toThrowError(ConfigError);
    expect(() => settings(env)).toThrowError(new RegExp(`^invalid configuration: ${variable} `));
  });
});
