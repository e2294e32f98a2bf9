import path from "node:path";
import { z } from "zod";
import { integer, parseEnv, port } from "../lib/config.ts";
import { defaultKeysDir } from "../lib/keys-dir.ts";
import { redisUrl } from "../lib/redis-client.ts";
import { batchFitsQueue, OTEL_ENV } from "../lib/tracing/config.ts";
import { isPostgresUrl } from "../pet-service/store/pets-db-url.ts";
import { keysDb } from "./config.ts";
import { ADMIN_TOKEN_PATTERN } from "./admin-tokens/tokens.ts";


/** The key service's variables (exported so deploy/ manifests can be checked against it). */
export const KEY_SERVICE_ENV = z
  .object({
    /** The registry: a SQLite file (created on first start; one replica) or postgres://… (any number of replicas). */
    KEYS_DB: keysDb,
    /** The signing key pairs; the service creates one at first start when none exists. */
    KEYS_DIR: z.string().default(defaultKeysDir),
    /** The admin API: loopback by default, never the public port. */
    KEYS_HOST: z.union([z.ipv4(), z.ipv6(), z.hostname()], { error: "must be an IP address or a host name" }).default("127.0.0.1"),
    KEYS_PORT: port(8081),
    /** The bootstrap admin token (scope admin); unset → generated at first start and saved to `<data>/admin-token`. */
    KEYS_ADMIN_TOKEN: z
      .string()
      .regex(ADMIN_TOKEN_PATTERN, "must be pskadm_ followed by 43 base64url characters (or leave it unset: one is generated at first start)")
      .optional(),
    /** With Redis, every key change is published to the key's Redis record (and the JWKS beside them). */
    REDIS_URL: redisUrl.optional(),
    /** In-flight requests (long polls included) get this long after SIGTERM before they are cut. */
    SHUTDOWN_GRACE_MS: integer(5_000, "a positive number of milliseconds", 1),
    ...OTEL_ENV,
  })
  .refine(batchFitsQueue.check, batchFitsQueue.params);

export type KeyServiceConfig = Readonly<z.infer<typeof KEY_SERVICE_ENV>>;

/** Parsed once at start; a bad value throws a ConfigError naming the variable. */
export const loadKeyServiceConfig = (env: NodeJS.ProcessEnv = process.env): KeyServiceConfig => parseEnv(KEY_SERVICE_ENV, env, { secrets: ["KEYS_ADMIN_TOKEN"] });

/** Where a generated admin token is saved: beside the SQLite registry, or data/ with PostgreSQL. */
export const adminTokenFile = (keysDb: string): string => path.join(isPostgresUrl(keysDb) ? "data" : path.dirname(keysDb), "admin-token");

/** Closing the registry, Redis and exporting the last spans get this long after the drain. */
const CLOSE_MS = 2_000;

/** From SIGTERM to the process being gone, whatever is still running then. */
export const shutdownDeadlineMs = (config: KeyServiceConfig): number => config.SHUTDOWN_GRACE_MS + CLOSE_MS;
