import type { ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { runMain } from "../lib/config.ts";
import { exitWhenLogged, startShutdownDeadline } from "../lib/exit.ts";
import { createLogger } from "../lib/logger.ts";
import { loadGatewayConfig, shutdownDeadlineMs } from "./config.ts";
import { createGateway, createHttpServer } from "./gateway.ts";
import { createGatewayMetrics } from "./ops/metrics.ts";
import { systemClock } from "../lib/clock.ts";
import { tracingSettings } from "../lib/tracing/config.ts";
import { startTracing } from "../lib/tracing/start.ts";

await runMain(async () => {
  const config = loadGatewayConfig();
  const tracing = startTracing("gateway", tracingSettings(config));
  const logger = createLogger("gateway");
  if (!config.KEYS_SERVICE_TOKEN) logger.warn("KEYS_SERVICE_TOKEN is not set: the key service will refuse the feed and every /v1 request gets 503 until it is");
  const gateway = await createGateway(config, { clock: systemClock, logger, metrics: createGatewayMetrics({ defaultMetrics: true }) });
  const { app } = gateway;

  const server = createHttpServer(app, logger, config).listen(config.GATEWAY_PORT, config.GATEWAY_HOST, () => {
    const { port } = server.address() as AddressInfo;
    logger.info(
      {
        port,
        host: config.GATEWAY_HOST,
        petService: config.PET_SERVICE_ADDR,
        petServiceTls: Boolean(config.PET_SERVICE_TLS_CA ?? config.PET_SERVICE_TLS_CLIENT_CERT),
        redis: Boolean(config.REDIS_URL),
        keyService: config.KEYS_URL,
        tracesExported: tracing.exporting,
        node: process.version,
      },
      "gateway listening",
    );
  });
  server.on("error", (err) => {
    logger.fatal({ err }, "gateway could not listen");
    void exitWhenLogged(1);
  });

  // SIGTERM: /readyz turns 503 at once; after SHUTDOWN_DELAY_MS (time for load balancers to
  // notice) the listener closes, in-flight requests finish (forced after SHUTDOWN_GRACE_MS),
  // then the gRPC channel, Redis and the key watchers close and the process exits 0; whatever
  // still runs at shutdownDeadlineMs (2 s later) does not keep it.
  let stopping = false;
  // From SIGTERM on every response says Connection: close, those in flight included. Node keeps
  // a connection alive after close() when its request was in flight: the client's pool may send
  // more on it, and close() waited for the keep-alive timeout (5 s) or SHUTDOWN_GRACE_MS.
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  const closeAfterResponse = (res: ServerResponse | null | undefined) => {
    if (res && !res.headersSent) res.setHeader("Connection", "close");
  };
  server.prependListener("request", (_req, res) => {
    if (stopping) closeAfterResponse(res);
  });
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    startShutdownDeadline(shutdownDeadlineMs(config), logger, signal);
    // The response a connection is writing now (the same field Node's own clientError handling reads).
    for (const socket of sockets) closeAfterResponse((socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage);
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
      // The last requests' spans leave before the process does.
      await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "exporting the last spans failed"));
      logger.info("gateway stopped");
      await exitWhenLogged(0);
    });
    server.closeIdleConnections();
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
});
