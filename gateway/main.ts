import type { AddressInfo } from "node:net";
import { runMain } from "../lib/config.js";
import { createLogger } from "../lib/logger.js";
import { loadGatewayConfig } from "./config.js";
import { createGateway, createHttpServer } from "./gateway.js";
import { createGatewayMetrics } from "./metrics.js";

await runMain(async () => {
  const config = loadGatewayConfig();
  const logger = createLogger("gateway");
  const gateway = await createGateway(config, { clock: Date.now, logger, metrics: createGatewayMetrics({ defaultMetrics: true }) });
  const { app } = gateway;

  const server = createHttpServer(app, logger, config).listen(config.GATEWAY_PORT, config.GATEWAY_HOST, () => {
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
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.markStopping();
    logger.info({ signal, delayMs: config.SHUTDOWN_DELAY_MS }, "gateway shutting down");
    await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_MS));
    const force = setTimeout(() => {
      logger.warn("in-flight requests did not finish in time; closing");
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    force.unref();
    server.close(async () => {
      await gateway.close();
      logger.info("gateway stopped");
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
});
