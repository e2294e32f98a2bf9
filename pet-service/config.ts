import { z } from "zod";
import { integer, parseEnv, port } from "../lib/config.ts";
import type { TlsFiles } from "../lib/tls-files.ts";
import { batchFitsQueue, OTEL_ENV, tracingSettings, type TracingSettings } from "../lib/tracing/config.ts";
import { DEFAULT_POOL_SIZE } from "./store/postgres/store.ts";
import { isOtherUrl } from "./store/pets-db-url.ts";

/**
 * From the stop signal to the process being gone, whatever still runs then (the drain takes 8 s at
 * most; closing the database or exporting the last spans could hang): before Kubernetes' SIGKILL.
 */
export const SHUTDOWN_DEADLINE_MS = 9_500;

/** The pet service's variables (exported so tests/unit/deploy checks the manifests against it). */
export const PET_SERVICE_ENV = z
  .object({
    /** Bind address of every listener: loopback by default; containers set 0.0.0.0 (or :: for IPv6). */
    PET_SERVICE_HOST: z
      .union([z.ipv4(), z.ipv6(), z.hostname()], { error: "must be an IP address or a host name" })
      .default("127.0.0.1"),
    PET_SERVICE_PORT: port(50051),
    /**
     * A SQLite file (it, its directory and the schema are created on first start; one replica), or
     * a PostgreSQL URL, postgres://user:password@host:5432/database (any number of replicas).
     */
    PETS_DB: z
      .string()
      .refine((v) => !isOtherUrl(v), "must be a SQLite file path or a postgres:// (postgresql://) URL")
      .default("data/pets.sqlite"),
    /** PostgreSQL only: connections per replica, all opened at start (plus one for health pings). Size it so replicas × (this + 1) stays under the server's max_connections. */
    PETS_DB_POOL_SIZE: integer(DEFAULT_POOL_SIZE, "an integer 1..1000", 1, 1000),
    /** HTTP port for GET /metrics (Prometheus) and GET /healthz; unset = no HTTP listener. */
    METRICS_PORT: port(0).unwrap().optional(),
    /** TLS: this service's certificate (chain) and key, PEM files re-read when they change; unset = plaintext. */
    PET_SERVICE_TLS_CERT: z.string().optional(),
    PET_SERVICE_TLS_KEY: z.string().optional(),
    /** mTLS: only clients with a certificate this CA signed (PEM), their subject logged and counted as `caller`. */
    PET_SERVICE_TLS_CLIENT_CA: z.string().optional(),
    ...OTEL_ENV,
  })
  .refine((env) => env.METRICS_PORT === undefined || env.METRICS_PORT === 0 || env.METRICS_PORT !== env.PET_SERVICE_PORT, {
    path: ["METRICS_PORT"],
    message: "must differ from PET_SERVICE_PORT",
  })
  .refine((env) => (env.PET_SERVICE_TLS_CERT === undefined) === (env.PET_SERVICE_TLS_KEY === undefined), {
    path: ["PET_SERVICE_TLS_KEY"],
    message: "and PET_SERVICE_TLS_CERT must be set together",
  })
  .refine((env) => env.PET_SERVICE_TLS_CLIENT_CA === undefined || env.PET_SERVICE_TLS_CERT !== undefined, {
    path: ["PET_SERVICE_TLS_CLIENT_CA"],
    message: "needs PET_SERVICE_TLS_CERT and PET_SERVICE_TLS_KEY (client certificates are asked for over TLS only)",
  })
  .refine(batchFitsQueue.check, batchFitsQueue.params);

export interface PetServiceConfig {
  host: string;
  port: number;
  /** PETS_DB: a SQLite file path or a postgres:// URL (pet-service/store/open-store.ts). */
  petsDb: string;
  /** PostgreSQL pool size (PETS_DB_POOL_SIZE). */
  poolSize: number;
  /** Absent when METRICS_PORT is unset: no HTTP listener at all. 0 picks a free port. */
  metricsPort?: number;
  /** TLS files when PET_SERVICE_TLS_CERT is set (`ca`: PET_SERVICE_TLS_CLIENT_CA, for mTLS); absent: plaintext. */
  tls?: TlsFiles;
  tracing: TracingSettings;
}

/** Parsed once at start; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Readonly<PetServiceConfig> {
  const parsed = parseEnv(PET_SERVICE_ENV, env);
  return Object.freeze({
    host: parsed.PET_SERVICE_HOST,
    port: parsed.PET_SERVICE_PORT,
    petsDb: parsed.PETS_DB,
    poolSize: parsed.PETS_DB_POOL_SIZE,
    ...(parsed.METRICS_PORT !== undefined && { metricsPort: parsed.METRICS_PORT }),
    ...(parsed.PET_SERVICE_TLS_CERT !== undefined && {
      tls: {
        cert: { variable: "PET_SERVICE_TLS_CERT", path: parsed.PET_SERVICE_TLS_CERT },
        key: { variable: "PET_SERVICE_TLS_KEY", path: parsed.PET_SERVICE_TLS_KEY! },
        ...(parsed.PET_SERVICE_TLS_CLIENT_CA !== undefined && { ca: { variable: "PET_SERVICE_TLS_CLIENT_CA", path: parsed.PET_SERVICE_TLS_CLIENT_CA } }),
      },
    }),
    tracing: tracingSettings(parsed),
  });
}
