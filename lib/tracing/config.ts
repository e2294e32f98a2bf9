import { z } from "zod";
import { decimalText } from "../config.ts";

/**
 * The standard OpenTelemetry variables both processes read (opentelemetry.io, "SDK environment
 * variables"), checked at start like every other setting: a typo ("http/proto", "traceratio")
 * stops the process with one line naming the variable instead of silently tracing nothing.
 * Spread into each process's schema, so deploy/ is checked against them too.
 *
 * Exporters read OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, …_TIMEOUT, …_COMPRESSION and the
 * certificate variables themselves; they are listed here so a bad value is refused at start.
 */
const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type SamplerName = (typeof SAMPLERS)[number];

const PROTOCOLS = ["http/protobuf", "http/json"] as const;
export type OtlpProtocol = (typeof PROTOCOLS)[number];

const protocol = z.enum(PROTOCOLS, { error: "must be http/protobuf or http/json (OTLP over HTTP; gRPC export is not built in)" }).optional();
const endpoint = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional();
const milliseconds = (min: number) =>
  z.preprocess(decimalText, z.number({ error: "must be milliseconds" }).int("must be an integer").min(min, `must be ≥ ${min}`)).optional();
const count = z.preprocess(decimalText, z.number({ error: "must be a positive integer" }).int("must be a positive integer").min(1, "must be a positive integer")).optional();
const compression = z.enum(["gzip", "none"], { error: "must be gzip or none" }).optional();
/** Booleans as the specification reads them: "true" in any case is true, anything else false. */
const flag = z.string().transform((v) => v.trim().toLowerCase() === "true").optional();

export const OTEL_ENV = {
  OTEL_SDK_DISABLED: flag,
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  OTEL_TRACES_EXPORTER: z.enum(["otlp", "none"], { error: "must be otlp or none" }).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_TIMEOUT: milliseconds(1),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: milliseconds(1),
  OTEL_EXPORTER_OTLP_COMPRESSION: compression,
  OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: compression,
  OTEL_EXPORTER_OTLP_CERTIFICATE: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: z.string().optional(),
  OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE: z.string().optional(),
  OTEL_EXPORTER_OTLP_CLIENT_KEY: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY: z.string().optional(),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, { error: `must be one of ${SAMPLERS.join(", ")}` }).optional(),
  OTEL_TRACES_SAMPLER_ARG: z
    .preprocess(decimalText, z.number({ error: "must be a ratio 0..1" }).min(0, "must be a ratio 0..1").max(1, "must be a ratio 0..1"))
    .optional(),
  OTEL_BSP_SCHEDULE_DELAY: milliseconds(0),
  OTEL_BSP_EXPORT_TIMEOUT: milliseconds(0),
  OTEL_BSP_MAX_QUEUE_SIZE: count,
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: count,
};

type OtelEnv = { [K in keyof typeof OTEL_ENV]?: z.infer<(typeof OTEL_ENV)[K]> };

/** What tracing needs of a process's parsed environment. */
export interface TracingSettings {
  /**
   * OTEL_SDK_DISABLED=true: no tracing at all, OpenTelemetry's no-op as the specification has it
   * (no ids, no propagation); otherwise absent.
   */
  disabled?: true;
  /** Where spans go (…_TRACES_ENDPOINT as given, or …_ENDPOINT + /v1/traces); unset: nothing is exported. */
  url?: string;
  protocol: OtlpProtocol;
  sampler: SamplerName;
  /** The ratio of the traceidratio samplers. */
  ratio: number;
  batch: { scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number };
}

/** The OTLP/HTTP path of traces under OTEL_EXPORTER_OTLP_ENDPOINT (the specification's rule). */
const TRACES_PATH = "v1/traces";

export function tracingSettings(env: OtelEnv): TracingSettings {
  const disabled = env.OTEL_SDK_DISABLED === true;
  const off = disabled || env.OTEL_TRACES_EXPORTER === "none";
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = off ? undefined : (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base && `${base.replace(/\/?$/, "/")}${TRACES_PATH}`));
  const batch = {
    ...(env.OTEL_BSP_SCHEDULE_DELAY !== undefined && { scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY }),
    ...(env.OTEL_BSP_EXPORT_TIMEOUT !== undefined && { exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT }),
    ...(env.OTEL_BSP_MAX_QUEUE_SIZE !== undefined && { maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE }),
    ...(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE !== undefined && { maxExportBatchSize: env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE }),
  };
  return {
    ...(disabled && { disabled }),
    ...(url && { url }),
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/protobuf",
    sampler: env.OTEL_TRACES_SAMPLER ?? "parentbased_always_on",
    ratio: env.OTEL_TRACES_SAMPLER_ARG ?? 1,
    batch,
  };
}

/** For a schema's refine: the batch can never exceed the queue (the SDK would shrink it silently). */
export const batchFitsQueue = {
  check: (env: Pick<OtelEnv, "OTEL_BSP_MAX_QUEUE_SIZE" | "OTEL_BSP_MAX_EXPORT_BATCH_SIZE">) =>
    (env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? 512) <= (env.OTEL_BSP_MAX_QUEUE_SIZE ?? 2048),
  params: { path: ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"], message: "must not exceed OTEL_BSP_MAX_QUEUE_SIZE (default 2048)" },
};
