import type { AddressInfo } from "node:net";
import { runMain } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { createApp } from "./app.js";
import { createKeyVerifier } from "./auth/jwt-verifier.js";
import { watchRevocations } from "./auth/revocation-list.js";
import { loadGatewayConfig, upstreamsOf } from "./config.js";
import { createLimiter } from "./limiter/create-limiter.js";
import { ANONYMOUS_WINDOWS } from "./limiter/plans.js";
import { createGatewayMetrics } from "./metrics.js";
import { createPetClient } from "./pet-client.js";
import { notReadyReasons, petServiceHealth, type ReadinessCheck } from "./readiness.js";

await runMain(async () => {
  const config = loadGatewayConfig();
  const logger = createLogger("gateway");
  const clock = Date.now;
  const metrics = createGatewayMetrics({ defaultMetrics: true });

  const revocations = watchRevocations({ keysDir: config.KEYS_DIR });
  const verifier = createKeyVerifier({ keysDir: config.KEYS_DIR, clock, revocations });
  const limiter = createLimiter({
    redisUrl: config.REDIS_URL,
    ban: { after: config.BAN_AFTER, seconds: config.BAN_SECONDS },
    clock,
    logger,
    metrics: { faults: metrics.redisFaults, fallbackActive: metrics.limiterFallback },
  });
  const pets = createPetClient({ address: config.PET_SERVICE_ADDR, timeoutMs: config.PET_SERVICE_TIMEOUT_MS, latency: metrics.grpcDuration });
  const petHealth = petServiceHealth(config.PET_SERVICE_ADDR);

  let stopping = false;
  const checks: ReadinessCheck[] = [
    async () => (stopping ? "shutting down" : undefined),
    petHealth,
    async () => (limiter.mode === "redis" && limiter.usingFallback() ? "redis unavailable (limiting from memory)" : undefined),
  ];

  if (!(await limiter.ready(2000))) logger.warn("redis not reachable at start; limiting from memory until it is");

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
  });

  const server = app.listen(config.GATEWAY_PORT, config.GATEWAY_HOST, () => {
    const { port } = server.address() as AddressInfo;
    logger.info({ port, host: config.GATEWAY_HOST, petService: config.PET_SERVICE_ADDR, redis: Boolean(config.REDIS_URL) }, "gateway listening");
  });
  server.on("error", (err) => {
    logger.fatal({ err }, "gateway could not listen");
    process.exit(1);
  });

  // SIGTERM: /readyz turns 503 at once; after SHUTDOWN_DELAY_MS (time for load balancers to
  // notice) the listener closes, in-flight requests finish (forced after SHUTDOWN_GRACE_MS),
  // then the gRPC channel, Redis and the key watchers close and the process exits 0.
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, delayMs: config.SHUTDOWN_DELAY_MS }, "gateway shutting down");
    await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_MS));
    const force = setTimeout(() => {
      logger.warn("in-flight requests did not finish in time; closing");
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    force.unref();
    server.close(async () => {
      pets.close();
      petHealth.close();
      verifier.close();
      revocations.close();
      await limiter.close();
      logger.info("gateway stopped");
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
});
