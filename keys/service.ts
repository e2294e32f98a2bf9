import http from "node:http";
import type express from "express";
import type { Clock } from "../lib/clock.ts";
import { clientErrorHandler } from "../lib/http/client-error.ts";
import type { Logger } from "../lib/logger.ts";
import { StorageUnavailableError } from "../lib/storage-faults.ts";
import { ensureBootstrapToken, type Bootstrapped } from "./admin-tokens/bootstrap.ts";
import { createAdminApp } from "./api/app.ts";
import { createKeyServiceMetrics, type KeyServiceMetrics } from "./api/metrics.ts";
import { startFeed, type Feed } from "./feed/feed.ts";
import { ensureKeyPair } from "./key-pairs.ts";
import { createKeyOperations, type KeyOperations } from "./operations/index.ts";
import type { KeyRegistry } from "./registry/store.ts";
import { startWebhookWorker, type WebhookWorkerDeps } from "./webhooks/worker.ts";
import { startUsagePruning } from "./usage-history/pruning.ts";

export interface KeyServiceDeps {
  /** Open and migrated (keys/registry/open.ts); the service closes it. */
  registry: KeyRegistry;
  /** The signing pairs; one is created when none exists (as `keys init`). */
  keysDir: string;
  redisUrl?: string | undefined;
  /** KEYS_ADMIN_TOKEN; unset → the token saved in `adminTokenFile`, generated there at first start. */
  adminToken?: string | undefined;
  adminTokenFile: string;
  clock: Clock;
  logger: Logger;
  metrics?: KeyServiceMetrics;
  /** The webhook delivery worker's schedule, per-attempt timeout, polling, lease and replica name (tests shorten them). */
  webhooks?: Pick<WebhookWorkerDeps, "schedule" | "timeoutMs" | "pollMs" | "leaseMs" | "owner">;
}

export interface KeyService {
  app: express.Express;
  registry: KeyRegistry;
  operations: KeyOperations;
  /** The bootstrap admin token and where it was saved (never logged). */
  bootstrap: Bootstrapped;
  feed: Feed;
  /** From now on /readyz answers 503 (SIGTERM: the orchestrator stops sending). */
  markStopping(): void;
  /** Stops the webhook worker (leases given back), the follower (waking every long poll), Redis, and closes the registry. */
  close(): Promise<void>;
}

/**
 * The key service (DESIGN, Key service): signing pair, bootstrap admin token, the events follower
 * and Redis publisher, and the admin API's app on the injected registry. It does not listen:
 * keys/main.ts and tests do.
 */
export async function createKeyService(deps: KeyServiceDeps): Promise<KeyService> {
  const { registry, clock, logger } = deps;
  ensureKeyPair(deps.keysDir);
  const bootstrap = await ensureBootstrapToken(registry, { configured: deps.adminToken, file: deps.adminTokenFile, clock });
  const metrics = deps.metrics ?? createKeyServiceMetrics();
  const feed = await startFeed({ registry, logger, keysDir: deps.keysDir, redisUrl: deps.redisUrl });
  metrics.followEvents(() => feed.follower.head());
  const webhooks = startWebhookWorker({
    registry,
    clock,
    logger,
    head: () => feed.follower.head(),
    onAttempt: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
    ...deps.webhooks,
  });
  metrics.followWebhooks(() => webhooks.oldestPendingMs());
  const operations = createKeyOperations({ registry, keysDir: deps.keysDir, clock });
  const stopPruning = startUsagePruning({ registry, clock, logger });
  let stopping = false;
  const readiness = async (): Promise<string[]> => {
    if (stopping) return ["shutting down"];
    try {
      await registry.ping();
      return [];
    } catch (err) {
      return [err instanceof StorageUnavailableError ? `registry ${err.fault.replace("_", " ")}` : "registry unreachable"];
    }
  };
  const app = createAdminApp({ registry, operations, follower: feed.follower, keysDir: deps.keysDir, redisUrl: deps.redisUrl, clock, logger, metrics, readiness });
  return {
    app,
    registry,
    operations,
    bootstrap,
    feed,
    markStopping: () => void (stopping = true),
    async close() {
      await webhooks.close();
      stopPruning();
      await feed.close();
      await registry.close();
    },
  };
}

/** The admin API's HTTP server: our Error body for what Node's parser refuses, and slow clients cut. */
export function createKeyServiceServer(app: express.Express, logger: Logger): http.Server {
  const server = http.createServer({ maxHeaderSize: 16 * 1024, headersTimeout: 10_000, requestTimeout: 30_000 }, app);
  server.on("clientError", clientErrorHandler(logger));
  return server;
}
