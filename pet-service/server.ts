import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation, protoPath as healthProtoPath } from "grpc-health-check";
import type { Logger } from "../lib/logger.ts";
import type { TlsSource } from "../lib/tls-files.ts";
import { withGeneratedCodecs } from "../proto/generated-codecs.ts";
import { LOADER_OPTIONS, loadPetServiceDefinition, PET_SERVICE_NAME } from "../proto/load.ts";
import { petServiceHandlers, type HandlerDeps } from "./handlers.ts";
import { createStorageHealth, type StorageHealth } from "./storage-health.ts";
import type { PetStore } from "./store/pet-store.ts";
import { listenTls, type TlsListener } from "./tls-listener.ts";

export interface PetServerDeps {
  store: PetStore;
  logger: Logger;
  /** Optional: PetService calls are counted and timed by method and code (pet-service/metrics.ts). */
  metrics?: HandlerDeps["metrics"];
  /** Ages CreatePet's idempotency keys (the system clock by default). */
  clock?: HandlerDeps["clock"];
  /** How long shutdown() lets in-flight calls run before cancelling them. */
  shutdownGraceMs?: number;
  /** Ping intervals of the database while it answers / while it does not (storage-health.ts). */
  storageHealth?: { upIntervalMs?: number; downIntervalMs?: number };
  /**
   * TLS (PET_SERVICE_TLS_CERT/KEY, re-read when they change); with `requireClientCert`
   * (PET_SERVICE_TLS_CLIENT_CA) only clients whose certificate that CA signed. Plaintext when absent.
   */
  tls?: { source: TlsSource; requireClientCert: boolean };
}

export interface PetServer {
  server: grpc.Server;
  health: HealthImplementation;
  /** Whether the database serves; petstore.v1.PetService health follows it while listening. */
  storage: StorageHealth;
  /** Binds host:port (port 0 picks a free port) and resolves with the bound port. */
  listen(host: string, port: number): Promise<number>;
  /**
   * Stops following the database; health NOT_SERVING, no new calls or connections, in-flight calls finish; whatever is still
   * running after the grace period is cancelled. Resolves when the server is down. Idempotent.
   * The store is the caller's: close it afterwards.
   */
  shutdown(): Promise<void>;
}

/** "" is the whole server (what Kubernetes and grpc_health_probe ask by default). */
const HEALTH_SERVICES = ["", PET_SERVICE_NAME];
const DEFAULT_SHUTDOWN_GRACE_MS = 8_000;

/** PetService, grpc.health.v1.Health and server reflection on one grpc.Server; does not bind. */
export function createServer(deps: PetServerDeps): PetServer {
  const { logger, shutdownGraceMs = DEFAULT_SHUTDOWN_GRACE_MS } = deps;
  const definition = loadPetServiceDefinition();
  // No channelz bookkeeping (per-call counters and timestamps): nothing reads it, every call pays
  // for it. Connections are closed (GOAWAY, in-flight calls finish) after 5 minutes: clients then
  // resolve the name again, so replicas added behind a headless Service get traffic.
  const server = new grpc.Server({
    "grpc.enable_channelz": 0,
    "grpc.max_connection_age_ms": 5 * 60_000,
    "grpc.max_connection_age_grace_ms": 30_000,
  });
  const health = new HealthImplementation(Object.fromEntries(HEALTH_SERVICES.map((s) => [s, "SERVING"])));
  // Only the PetService status follows the database: "" is liveness (the process answers), and a
  // database outage must not make Kubernetes restart every replica.
  const storage = createStorageHealth({
    store: deps.store,
    logger,
    onChange: (serving) => health.setStatus(PET_SERVICE_NAME, serving ? "SERVING" : "NOT_SERVING"),
    ...deps.storageHealth,
  });
  let tlsListener: TlsListener | undefined;
  server.addService(
    withGeneratedCodecs(definition)[PET_SERVICE_NAME] as grpc.ServiceDefinition,
    petServiceHandlers({ ...deps, store: storage.guard(deps.store), callerOf: (peer) => tlsListener?.callerOf(peer) }),
  );

  health.addToServer(server);
  new ReflectionService({ ...definition, ...loadHealthDefinition() }).addToServer(server);

  let stopped: Promise<void> | undefined;
  return {
    server,
    health,
    storage,
    listen: async (host, port) => {
      if (deps.tls) {
        tlsListener = await listenTls(server, { host, port, ...deps.tls, logger });
        storage.start();
        return tlsListener.port;
      }
      return new Promise((resolve, reject) => {
        storage.start();
        // IPv6 literals need brackets in a gRPC target.
        const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
        server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, bound) =>
          err ? reject(err) : resolve(bound),
        );
      });
    },
    shutdown: () =>
      (stopped ??= new Promise((resolve) => {
        storage.stop();
        tlsListener?.close();
        for (const service of HEALTH_SERVICES) health.setStatus(service, "NOT_SERVING");
        const force = setTimeout(() => {
          logger.warn({ graceMs: shutdownGraceMs }, "calls still running after the grace period; cancelling them");
          server.forceShutdown();
          resolve();
        }, shutdownGraceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      })),
  };
}

/** Reflection describes the health service too, so `grpcurl list` shows everything served. */
function loadHealthDefinition(): protoLoader.PackageDefinition {
  const includeDir = path.resolve(path.dirname(healthProtoPath), "../..");
  return protoLoader.loadSync("health/v1/health.proto", { ...LOADER_OPTIONS, includeDirs: [includeDir] });
}
