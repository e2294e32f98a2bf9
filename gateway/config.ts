import express from "express";
import { z } from "zod";
import { decimalText, integer, parseEnv, port } from "../lib/config.ts";
import { DEFAULT_COMMAND_TIMEOUT_MS, redisUrl } from "../lib/redis-client.ts";
import type { TlsFiles } from "../lib/tls-files.ts";
import { batchFitsQueue, OTEL_ENV } from "../lib/tracing/config.ts";
import { GRPC_TARGET_FORMS, isGrpcTarget } from "./pet-client/grpc-target.ts";
import type { Upstream } from "./upstreams/upstreams.ts";

const positiveInt = (fallback: number, what: string) => integer(fallback, what, 1);

/** "true"/"false", a hop count, or a list of trusted proxy addresses/subnets (Express syntax). */
const trustProxy = z
  .string()
  .default("false")
  .transform((v) => (v === "true" ? true : v === "false" ? false : /^[0-9]+$/.test(v) ? Number(v) : v))
  // Express compiles an address list only when the app is built, and a typo ("yes") then crashed
  // the started gateway with a stack trace: compile it here, so it is a config error like any other.
  .refine(
    (v) => {
      try {
        express().set("trust proxy", v);
        return true;
      } catch {
        return false;
      }
    },
    { error: "must be true, false, a hop count or a list of addresses/subnets (loopback, 10.0.0.0/8, …)" },
  );

/** An http:// or https:// URL (z.string().url() alone takes any scheme: ftp:, mailto:, …). */
const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

export const GATEWAY_ENV = z.object({
  GATEWAY_HOST: z.string().default("0.0.0.0"),
  GATEWAY_PORT: port(8080),
  /** A gRPC target: the pet service's replicas, balanced round robin (lib/grpc-target.ts). */
  PET_SERVICE_ADDR: z
    .string()
    .refine(isGrpcTarget, `must be a gRPC target: ${GRPC_TARGET_FORMS}`)
    .default("127.0.0.1:50051"),
  PET_SERVICE_TIMEOUT_MS: positiveInt(2000, "a positive number of milliseconds"),
  REDIS_URL: redisUrl.optional(),
  /**
   * How long a limiter decision waits for Redis. Past it the decision is refused with 503 (never
   * guessed: the script may have counted it); a minute is surely a mistake of units.
   */
  REDIS_COMMAND_TIMEOUT_MS: integer(DEFAULT_COMMAND_TIMEOUT_MS, "a number of milliseconds from 1 to 60000", 1, 60_000),
  /** The key service (its JWKS and change feed) and the admin token (scope `gateway`) the feed needs. */
  KEYS_URL: httpUrl.default("http://127.0.0.1:8081"),
  KEYS_SERVICE_TOKEN: z.string().min(1, "must not be empty").optional(),
  /** Counting each key's requests and reporting them to the key service (the usage history); `off` only to measure what it costs. */
  USAGE_REPORTING: z.enum(["on", "off"], { error: "must be on or off" }).default("on"),
  /** Without Redis only: where the memory limiter publishes usage.json for `keys usage` (unset: nowhere). */
  KEYS_DIR: z.string().optional(),
  /** Self-serve sign-up on /portal (Free keys through the key service): off unless `open`. */
  SIGNUP: z.enum(["off", "open"], { error: "must be off or open" }).default("off"),
  BAN_AFTER: positiveInt(20, "a positive integer"),
  BAN_SECONDS: positiveInt(900, "a positive number of seconds"),
  TRUST_PROXY: trustProxy,
  BODY_LIMIT_BYTES: positiveInt(16 * 1024, "a positive number of bytes"),
  STORE_UPSTREAM_URL: httpUrl.optional(),
  CATEGORIES_UPSTREAM_URL: httpUrl.optional(),
  UPSTREAM_TIMEOUT_MS: positiveInt(5000, "a positive number of milliseconds"),
  SHUTDOWN_DELAY_MS: z.preprocess(decimalText, z.number({ error: "must be milliseconds" }).int("must be an integer").min(0, "must be ≥ 0")).default(0),
  SHUTDOWN_GRACE_MS: positiveInt(10_000, "a positive number of milliseconds"),
  /** A client must have sent the request line and headers within this (slow clients get 408). */
  HEADERS_TIMEOUT_MS: positiveInt(10_000, "a positive number of milliseconds"),
  /** …and the whole request, body included, within this. */
  REQUEST_TIMEOUT_MS: positiveInt(30_000, "a positive number of milliseconds"),
  /**
   * TLS to the pet service (any of the three set): the CA that signs its certificate (Node's
   * public roots when unset), and this gateway's client certificate and key for mTLS. PEM files,
   * re-read when they change.
   */
  PET_SERVICE_TLS_CA: z.string().optional(),
  PET_SERVICE_TLS_CLIENT_CERT: z.string().optional(),
  PET_SERVICE_TLS_CLIENT_KEY: z.string().optional(),
  ...OTEL_ENV,
})
  .refine((env) => env.REQUEST_TIMEOUT_MS >= env.HEADERS_TIMEOUT_MS, {
    path: ["REQUEST_TIMEOUT_MS"],
    message: "must be at least HEADERS_TIMEOUT_MS",
  })
  .refine((env) => (env.PET_SERVICE_TLS_CLIENT_CERT === undefined) === (env.PET_SERVICE_TLS_CLIENT_KEY === undefined), {
    path: ["PET_SERVICE_TLS_CLIENT_KEY"],
    message: "and PET_SERVICE_TLS_CLIENT_CERT must be set together",
  })
  .refine(batchFitsQueue.check, batchFitsQueue.params);

export type GatewayConfig = Readonly<z.infer<typeof GATEWAY_ENV>>;

/**
 * After the drain (SHUTDOWN_DELAY_MS, then SHUTDOWN_GRACE_MS at most), closing the gRPC channel,
 * the limiter's Redis and the key watchers and exporting the last spans get this long.
 */
const CLOSE_MS = 2_000;

/** From SIGTERM to the process being gone, whatever is still running then. */
export function shutdownDeadlineMs(config: GatewayConfig): number {
  return config.SHUTDOWN_DELAY_MS + config.SHUTDOWN_GRACE_MS + CLOSE_MS;
}

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return parseEnv(GATEWAY_ENV, env);
}

/** The files of TLS to the pet service; undefined when none is set (plaintext, h2c). */
export function petServiceTlsFiles(config: GatewayConfig): TlsFiles | undefined {
  const { PET_SERVICE_TLS_CA: ca, PET_SERVICE_TLS_CLIENT_CERT: cert, PET_SERVICE_TLS_CLIENT_KEY: key } = config;
  if (ca === undefined && cert === undefined) return undefined;
  return {
    ...(ca !== undefined && { ca: { variable: "PET_SERVICE_TLS_CA", path: ca } }),
    ...(cert !== undefined && { cert: { variable: "PET_SERVICE_TLS_CLIENT_CERT", path: cert } }),
    ...(key !== undefined && { key: { variable: "PET_SERVICE_TLS_CLIENT_KEY", path: key } }),
  };
}

/** The configured upstreams: /v1/store/* and /v1/categories* when their URLs are set. */
export function upstreamsOf(config: GatewayConfig): Upstream[] {
  const upstreams: Upstream[] = [];
  if (config.STORE_UPSTREAM_URL) upstreams.push({ prefix: "/store", target: config.STORE_UPSTREAM_URL });
  if (config.CATEGORIES_UPSTREAM_URL) upstreams.push({ prefix: "/categories", target: config.CATEGORIES_UPSTREAM_URL });
  return upstreams;
}
