import http from "node:http";
import type express from "express";
import type { Logger } from "../lib/logger.js";
import { createApp, type AppDeps } from "./app.js";
import { clientErrorHandler } from "./error-handler.js";
import { createKeyVerifier } from "./auth/jwt-verifier.js";
import { watchRevocations } from "./auth/revocation-list.js";
import { upstreamsOf, type GatewayConfig } from "./config.js";
import { createLimiter } from "./limiter/create-limiter.js";
import type { Clock, LimiterStore } from "./limiter/limiter.js";
import { ANONYMOUS_WINDOWS } from "./limiter/plans.js";
import { createGatewayMetrics, type GatewayMetrics } from "./metrics.js";
import { createPetClient } from "./pet-client.js";
import { notReadyReasons, petServiceHealth, type ReadinessCheck } from "./readiness.js";

export interface GatewayOptions {
  clock: Clock;
  logger: Logger;
  metrics?: GatewayMetrics;
  /** Tests only: another limiter store than the one REDIS_URL selects. */
  limiter?: LimiterStore;
  /** Tests only: replaces app dependencies after wiring. */
  overrides?: Partial<AppDeps>;
  /** How often KEYS_DIR/revoked.json is polled (default 1 s). */
  revocationPollMs?: number;
}

export interface Gateway {
  app: express.Express;
  /** From now on /readyz answers 503 "shutting down". */
  markStopping(): void;
  /** Closes the gRPC channels, Redis and the key watchers (after the HTTP server has closed). */
  close(): Promise<void>;
}

/**
 * Wires the gateway's real collaborators from its configuration: key verification, the limiter
 * REDIS_URL selects (waiting up to 2 s for Redis), one long-lived pet-service client, readiness.
 * main.ts listens on it; tests use the same wiring.
 */
export async function createGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { clock, logger } = opts;
  const metrics = opts.metrics ?? createGatewayMetrics();
  const revocations = watchRevocations({ keysDir: config.KEYS_DIR, ...(opts.revocationPollMs ? { pollMs: opts.revocationPollMs } : {}) });
  const verifier = createKeyVerifier({ keysDir: config.KEYS_DIR, clock, revocations });
  const limiter =
    opts.limiter ??
    createLimiter({
      redisUrl: config.REDIS_URL,
      ban: { after: config.BAN_AFTER, seconds: config.BAN_SECONDS },
      clock,
      logger,
      metrics: { faults: metrics.redisFaults, fallbackActive: metrics.limiterFallback },
    });
  const pets = createPetClient({ address: config.PET_SERVICE_ADDR, timeoutMs: config.PET_SERVICE_TIMEOUT_MS, latency: metrics.grpcDuration });
  const petHealth = petServiceHealth(config.PET_SERVICE_ADDR);
  metrics.probePetService(async () => (await petHealth()) === undefined);

  let stopping = false;
  const usingFallback = "usingFallback" in limiter ? (limiter.usingFallback as () => boolean) : () => false;
  const checks: ReadinessCheck[] = [
    async () => (stopping ? "shutting down" : undefined),
    petHealth,
    async () => (config.REDIS_URL && usingFallback() ? "redis unavailable (limiting from memory)" : undefined),
  ];
  if ("ready" in limiter && !(await (limiter.ready as (ms: number) => Promise<boolean>)(2000))) {
    logger.warn("redis not reachable at start; limiting from memory until it is");
  }

  const app = createApp({
    pets,
    verifier,
    limiter,
    clock,
    logger,
    trustProxy: config.TRUST_PROXY,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    anonymousWindows: ANONYMOUS_WINDOWS,
    metrics,
    readiness: () => notReadyReasons(checks),
    upstreams: upstreamsOf(config),
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    ...opts.overrides,
  });

  return {
    app,
    markStopping: () => {
      stopping = true;
    },
    async close() {
      pets.close();
      petHealth.close();
      verifier.close();
      revocations.close();
      await limiter.close();
    },
  };
}

/**
 * The gateway's HTTP server: parser limits, slow-client timeouts, and a JSON Error body (instead of
 * Node's empty 400/431) for requests Node's parser refuses before Express sees them.
 */
export function createHttpServer(app: express.Express, logger: Logger): http.Server {
  const server = http.createServer({ maxHeaderSize: 16 * 1024, headersTimeout: 10_000, requestTimeout: 30_000 }, app);
  server.on("clientError", clientErrorHandler(logger));
  return server;
}
