import { z } from "zod";
import { parseEnv, port } from "../lib/config.js";

/** The pet service's variables (exported so tests/unit/deploy checks the manifests against it). */
export const PET_SERVICE_ENV = z
  .object({
    /** Bind address of every listener: loopback by default; containers set 0.0.0.0 (or :: for IPv6). */
    PET_SERVICE_HOST: z
      .union([z.ipv4(), z.ipv6(), z.hostname()], { error: "must be an IP address or a host name" })
      .default("127.0.0.1"),
    PET_SERVICE_PORT: port(50051),
    /** SQLite file; it, its directory and the schema are created on first start. */
    PETS_DB: z.string().default("data/pets.sqlite"),
    /** HTTP port for GET /metrics (Prometheus) and GET /healthz; unset = no HTTP listener. */
    METRICS_PORT: port(0).unwrap().optional(),
  })
  .refine((env) => env.METRICS_PORT === undefined || env.METRICS_PORT === 0 || env.METRICS_PORT !== env.PET_SERVICE_PORT, {
    path: ["METRICS_PORT"],
    message: "must differ from PET_SERVICE_PORT",
  });

export interface PetServiceConfig {
  host: string;
  port: number;
  dbPath: string;
  /** Absent when METRICS_PORT is unset: no HTTP listener at all. 0 picks a free port. */
  metricsPort?: number;
}

/** Parsed once at start; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Readonly<PetServiceConfig> {
  const parsed = parseEnv(PET_SERVICE_ENV, env);
  return Object.freeze({
    host: parsed.PET_SERVICE_HOST,
    port: parsed.PET_SERVICE_PORT,
    dbPath: parsed.PETS_DB,
    ...(parsed.METRICS_PORT !== undefined && { metricsPort: parsed.METRICS_PORT }),
  });
}
