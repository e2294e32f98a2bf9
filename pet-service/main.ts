import { format } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { ConfigError, runMain } from "../lib/config.ts";
import { exitWhenLogged, startShutdownDeadline } from "../lib/exit.ts";
import { createLogger } from "../lib/logger.ts";
import { messageOf } from "../lib/error-message.ts";
import { loadConfig, SHUTDOWN_DEADLINE_MS } from "./config.ts";
import { createPetServiceMetrics } from "./metrics.ts";
import { listenMetrics, type MetricsServer } from "./metrics-server.ts";
import { createServer } from "./server.ts";
import { describePetsDb, openPetStore } from "./store/open-store.ts";
import { watchTlsFiles } from "../lib/tls-files.ts";
import { startTracing } from "../lib/tracing/start.ts";

await runMain(async () => {
  const config = loadConfig(process.env);
  const tracing = startTracing("pet-service", config.tracing);
  const logger = createLogger("pet-service");
  // TLS files are read now (a bad one stops the start, naming its variable) and whenever they change.
  const tls = config.tls && { source: watchTlsFiles(config.tls, { logger }), requireClientCert: config.tls.ca !== undefined };
  // grpc-js writes its own diagnostics to the console; keep every log line of this process JSON.
  const grpcLog = logger.child({ source: "grpc-js" });
  grpc.setLogger({
    error: (...args: unknown[]) => grpcLog.error(format(...args)),
    info: (...args: unknown[]) => grpcLog.info(format(...args)),
    debug: (...args: unknown[]) => grpcLog.debug(format(...args)),
  });

  // Metrics only when they can be scraped: without METRICS_PORT the hot path carries none.
  const metrics = config.metricsPort === undefined ? undefined : createPetServiceMetrics({ defaultMetrics: true });

  // Start-up failures that a setting can fix are reported like bad values: one line naming it.
  // An unreachable database at start is one too: the orchestrator restarts the process.
  const petsDb = describePetsDb(config.petsDb);
  const store = await openPetStore(config.petsDb, { metrics, logger, poolSize: config.poolSize }).catch((err: unknown) => {
    throw new ConfigError("PETS_DB", `cannot be opened (got ${JSON.stringify(petsDb)}): ${messageOf(err)}`);
  });
  const pet = createServer({ store, logger, metrics, ...(tls && { tls }) });
  const port = await pet.listen(config.host, config.port).catch(async (err: unknown) => {
    await store.close();
    const reason = messageOf(err);
    const variable = /EADDRINUSE|EACCES/.test(reason) ? "PET_SERVICE_PORT" : "PET_SERVICE_HOST";
    throw new ConfigError(variable, `cannot listen on ${config.host}:${config.port}: ${reason}`);
  });
  let metricsServer: MetricsServer | undefined;
  if (metrics && config.metricsPort !== undefined) {
    const metricsPort = config.metricsPort;
    metricsServer = await listenMetrics({ host: config.host, port: metricsPort, registry: metrics.registry, logger }).catch(
      async (err: unknown) => {
        await pet.shutdown();
        await store.close();
        const reason = messageOf(err);
        const variable = /EADDRINUSE|EACCES/.test(reason) ? "METRICS_PORT" : "PET_SERVICE_HOST";
        throw new ConfigError(variable, `cannot listen on ${config.host}:${metricsPort}: ${reason}`);
      },
    );
  }
  // Once everything listens (a start that fails prints nothing on stdout).
  const { schema } = store;
  logger.info(
    { petsDb, schemaVersion: schema.version, appliedMigrations: schema.applied, ...(schema.baselined && { baselined: true }) },
    schema.applied.length === 0
      ? `database schema at version ${schema.version}`
      : `database schema migrated to version ${schema.version}${schema.baselined ? " (a database made before versioned migrations, baselined at version 1)" : ""}`,
  );
  logger.info(
    {
      address: `${config.host}:${port}`,
      host: config.host,
      port,
      ...(metricsServer && { metricsPort: metricsServer.port }),
      petsDb,
      tls: tls ? (tls.requireClientCert ? "mtls" : "tls") : "off",
      tracesExported: tracing.exporting,
      node: process.version,
    },
    "pet-service listening",
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    // A second signal (a terminal sends SIGINT to the whole process group) must not cut the drain short.
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: draining in-flight calls");
    startShutdownDeadline(SHUTDOWN_DEADLINE_MS, logger, signal);
    // Metrics stay scrapeable while calls drain; the HTTP listener closes before the database.
    pet
      .shutdown()
      .then(() => metricsServer?.close())
      .then(() => store.close())
      // The last calls' spans leave before the process does.
      .then(() => tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "exporting the last spans failed")))
      .then(
        () => {
          logger.info("pet-service stopped");
          return exitWhenLogged(0);
        },
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          return exitWhenLogged(1);
        },
      );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
});
