import http from "node:http";
import type express from "express";
import type { Logger } from "../lib/logger.ts";
import { createApp, type AppDeps } from "./app.ts";
import { clientErrorHandler } from "../lib/http/client-error.ts";
import { createKeyVerifier } from "./auth/jwt-verifier.ts";
import { createKeyState } from "./auth/key-state.ts";
import { createPublicKeySet } from "./auth/jwks.ts";
import { followKeyService } from "./auth/key-service-feed.ts";
import { petServiceTlsFiles, upstreamsOf, type GatewayConfig } from "./config.ts";
import { createLimiter, type Limiter } from "./limiter/create-limiter.ts";
import { ANONYMOUS_WINDOWS } from "./quota/plans.ts";
import { createGatewayMetrics, limiterMetrics, type GatewayMetrics } from "./ops/metrics.ts";
import { createPetClient } from "./pet-client/pet-client.ts";
import { tracePetClient } from "./pet-client/traced.ts";
import { watchTlsFiles } from "../lib/tls-files.ts";
import { notReadyReasons, petServiceHealth, storageFaultOf, type ReadinessCheck } from "./ops/readiness.ts";
import type { Clock } from "../lib/clock.ts";
import { hostname } from "node:os";
import { keyServiceHistory } from "./usage/key-service-client.ts";
import { startUsageReporter } from "./usage/reporter.ts";

export interface GatewayOptions {
  clock: Clock;
  logger: Logger;
  metrics?: GatewayMetrics;
  /** Tests only: another limiter than the one REDIS_URL selects (a fake clock's, faster heartbeats). */
  limiter?: Limiter;
  /** Tests only: replaces app dependencies after wiring. */
  overrides?: Partial<AppDeps>;
  /** Tests only: key-hours of usage waiting for the key service at most (default 10,000). */
  usageBacklogKeyHours?: number;
}

export interface Gateway {
  app: express.Express;
  /** From now on /readyz answers 503 "shutting down". */
  markStopping(): void;
  /** Sends the last usage report, closes the gRPC channels, Redis and the key service's feed (after the HTTP server has closed). */
  close(): Promise<void>;
}

/**
 * Wires the gateway's real collaborators from its configuration: key verification (the key
 * service's JWKS and feed, followed in the background), the limiter
 * REDIS_URL selects (waiting up to 2 s for Redis), one long-lived pet-service client, readiness.
 * main.ts listens on it; tests use the same wiring.
 */
export async function createGateway(config: GatewayConfig, opts: GatewayOptions): Promise<Gateway> {
  const { clock, logger } = opts;
  const metrics = opts.metrics ?? createGatewayMetrics();
  // The key service's state, followed in the background: requests read it from memory.
  const keys = createKeyState();
  const publicKeys = createPublicKeySet();
  const feed = followKeyService({
    url: config.KEYS_URL,
    token: config.KEYS_SERVICE_TOKEN,
    state: keys,
    publicKeys,
    logger,
  });
  const verifier = createKeyVerifier({ publicKeys, keys, clock });
  metrics.probeKeyFeed(feed.following);
  const limiter =
    opts.limiter ??
    createLimiter({
      redisUrl: config.REDIS_URL,
      ...(config.KEYS_DIR !== undefined && { usageDir: config.KEYS_DIR }),
      ban: { after: config.BAN_AFTER, seconds: config.BAN_SECONDS },
      clock,
      logger,
      metrics: limiterMetrics(metrics),
      redis: { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS },
    });
  // TLS to the pet service when PET_SERVICE_TLS_* say so; the files are read now (a bad one stops the start) and on every change.
  const tlsFiles = petServiceTlsFiles(config);
  const tls = tlsFiles && watchTlsFiles(tlsFiles, { logger });
  const client = createPetClient({
    address: config.PET_SERVICE_ADDR,
    timeoutMs: config.PET_SERVICE_TIMEOUT_MS,
    latency: metrics.grpcDuration,
    retries: metrics.grpcRetries,
    ...(tls && { tls }),
  });
  const pets = tracePetClient(client);
  // The probe's own calls: no span of a request's trace.
  const petHealth = petServiceHealth(client, { explain: () => storageFaultOf(client) });
  metrics.probePetService(petHealth.serving);

  let stopping = false;
  // A partial outage (one Cluster node failing over) keeps the gateway ready: its other subjects
  // are still limited in Redis and the failing node's from memory, with this replica's share.
  const checks: ReadinessCheck[] = [
    async () => (stopping ? "shutting down" : undefined),
    async () => feed.notReady(),
    petHealth,
    async () => (limiter.outage() === "full" ? "redis unavailable (limiting from memory)" : undefined),
    async () => (limiter.late() === "full" ? "redis not answering in time (its decisions refused with 503)" : undefined),
  ];
  if (!(await limiter.ready(2000))) {
    // Without one heartbeat this replica cannot know its share of any limit: 503 until Redis answers.
    logger.warn("redis not reachable at start; answering 503 until it is (the number of gateway replicas is unknown)");
  }

  const usageReporter = config.USAGE_REPORTING === "off" ? undefined : startUsageReporter({
    url: config.KEYS_URL,
    token: config.KEYS_SERVICE_TOKEN,
    gatewayId: `${hostname()}:${process.pid}`,
    logger,
    metrics: { reports: metrics.usageReports, dropped: metrics.usageDropped },
    ...(opts.usageBacklogKeyHours !== undefined && { maxBacklogKeyHours: opts.usageBacklogKeyHours }),
  });
  if (usageReporter) metrics.followUsageBacklog(usageReporter.backlog);

  const app = createApp({
    pets,
    verifier,
    limiter,
    keys,
    clock,
    logger,
    trustProxy: config.TRUST_PROXY,
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    anonymousWindows: ANONYMOUS_WINDOWS,
    metrics,
    readiness: () => notReadyReasons(checks),
    upstreams: upstreamsOf(config),
    upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    usage: { counter: usageReporter?.counter, history: keyServiceHistory({ url: config.KEYS_URL, token: config.KEYS_SERVICE_TOKEN }) },
    portal: { signup: config.SIGNUP, keysUrl: config.KEYS_URL, keysToken: config.KEYS_SERVICE_TOKEN, logger },
    ...opts.overrides,
  });

  return {
    app,
    markStopping: () => {
      stopping = true;
    },
    async close() {
      // The last counts first, within the shutdown deadline's time for closing (config.ts, CLOSE_MS).
      await usageReporter?.close(USAGE_FLUSH_MS);
      pets.close();
      tls?.close();
      feed.close();
      await limiter.close();
    },
  };
}

/** How long close() gives the last usage report (of config.ts's 2 s for closing). */
const USAGE_FLUSH_MS = 1_000;

/**
 * How often Node looks for requests past their timeouts. Node's default (30 s) lets a slow client
 * hold its connection up to 30 s past the timeout; at 250 ms a client is cut within the timeout +
 * 0.25 s. Each look walks (in C++) only the connections whose request is not complete yet, so
 * thousands of slow clients cost next to nothing.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 250;

/**
 * The gateway's HTTP server: parser limits, slow-client timeouts (a connection that has not sent
 * its request line and headers within HEADERS_TIMEOUT_MS, or its whole request within
 * REQUEST_TIMEOUT_MS, gets 408 and is closed), and a JSON Error body (instead of Node's empty
 * 400/408/431) for requests Node's parser refuses before Express sees them.
 */
export function createHttpServer(
  app: express.Express,
  logger: Logger,
  timeouts: Pick<GatewayConfig, "HEADERS_TIMEOUT_MS" | "REQUEST_TIMEOUT_MS">,
): http.Server {
  const server = http.createServer(
    {
      maxHeaderSize: 16 * 1024,
      headersTimeout: timeouts.HEADERS_TIMEOUT_MS,
      requestTimeout: timeouts.REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
    app,
  );
  server.on("clientError", clientErrorHandler(logger));
  return server;
}
