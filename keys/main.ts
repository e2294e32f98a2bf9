import os from "node:os";
import { ConfigError, runMain } from "../lib/config.ts";
import { systemClock } from "../lib/clock.ts";
import { messageOf } from "../lib/error-message.ts";
import { exitWhenLogged, startShutdownDeadline } from "../lib/exit.ts";
import { listen } from "../lib/listen.ts";
import { createLogger } from "../lib/logger.ts";
import { withoutPasswords } from "../lib/redact-url.ts";
import { tracingSettings } from "../lib/tracing/config.ts";
import { startTracing } from "../lib/tracing/start.ts";
import { createKeyServiceMetrics } from "./api/metrics.ts";
import { openRegistry } from "./registry/open.ts";
import { adminTokenFile, loadKeyServiceConfig, shutdownDeadlineMs } from "./service-config.ts";
import { createKeyService, createKeyServiceServer } from "./service.ts";

await runMain(async () => {
  const config = loadKeyServiceConfig();
  const tracing = startTracing("key-service", tracingSettings(config));
  const logger = createLogger("key-service");
  const keysDb = withoutPasswords(config.KEYS_DB);
  // An unreachable or unopenable database at start is a setting to fix: one line naming it.
  const registry = await openRegistry(config.KEYS_DB).catch((err: unknown) => {
    throw new ConfigError("KEYS_DB", `cannot be opened (got ${JSON.stringify(keysDb)}): ${messageOf(err)}`);
  });
  const service = await createKeyService({
    registry,
    keysDir: config.KEYS_DIR,
    redisUrl: config.REDIS_URL,
    adminToken: config.KEYS_ADMIN_TOKEN,
    adminTokenFile: adminTokenFile(config.KEYS_DB),
    clock: systemClock,
    logger,
    metrics: createKeyServiceMetrics({ defaultMetrics: true }),
    // The same replica restarted (same host and port, after kill -9 say) takes its webhook leases back at once.
    webhooks: { owner: `${os.hostname()}:${config.KEYS_PORT}` },
  });
  const server = createKeyServiceServer(service.app, logger);
  const port = await listen(server, config.KEYS_PORT, config.KEYS_HOST).catch(async (err: unknown) => {
    await service.close();
    const reason = messageOf(err);
    throw new ConfigError(/EADDRINUSE|EACCES/.test(reason) ? "KEYS_PORT" : "KEYS_HOST", `cannot listen on ${config.KEYS_HOST}:${config.KEYS_PORT}: ${reason}`);
  });
  const host = config.KEYS_HOST.includes(":") ? `[${config.KEYS_HOST}]` : config.KEYS_HOST;
  logger.info(
    {
      url: `http://${host}:${port}`,
      keysDb,
      keysDir: config.KEYS_DIR,
      redis: Boolean(config.REDIS_URL),
      // Where the bootstrap token is, never the token.
      adminToken: service.bootstrap.file ?? "KEYS_ADMIN_TOKEN",
      tracesExported: tracing.exporting,
      node: process.version,
    },
    `key service listening on http://${host}:${port}`,
  );

  // SIGTERM: /readyz turns 503, waiting long polls are answered now, the listener closes and
  // in-flight requests finish (forced after SHUTDOWN_GRACE_MS); then Redis and the registry close
  // and the process exits 0. Whatever still runs at the deadline does not keep it.
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    startShutdownDeadline(shutdownDeadlineMs(config), logger, signal);
    logger.info({ signal }, "key service shutting down");
    service.markStopping();
    const force = setTimeout(() => {
      logger.warn("in-flight requests did not finish in time; closing");
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    force.unref();
    server.close(async () => {
      try {
        await service.close();
        await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "exporting the last spans failed"));
        logger.info("key service stopped");
        await exitWhenLogged(0);
      } catch (err) {
        logger.error({ err }, "shutdown failed");
        await exitWhenLogged(1);
      }
    });
    server.closeIdleConnections();
    // Long polls are answered at once (empty or with what arrived), not held to their wait.
    await service.feed.follower.close();
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
});
