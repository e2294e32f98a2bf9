import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * The pet service's Prometheus metrics, on a registry of their own (not prom-client's global
 * one) so several servers can live in one process, as they do in tests. Served on METRICS_PORT
 * (pet-service/metrics-server.ts).
 */
export interface PetServiceMetrics {
  registry: Registry;
  /** Every PetService call by RPC method and the gRPC status code it was answered with. */
  grpcHandled: Counter<"method" | "code">;
  grpcDuration: Histogram<"method" | "code">;
  /** Each SQLite statement by a fixed query name (SQLITE_QUERIES), never by its SQL text. */
  sqliteQueryDuration: Histogram<"query">;
  /** Creates committed per SQLite transaction (group commit: one fsync for all of them). */
  sqliteWritesPerCommit: Histogram;
  /** Calls answered UNAVAILABLE because the storage could not serve them, by fault (STORAGE_FAULTS). */
  storageFaults: Counter<"fault">;
}

/** The `query` label values: one per prepared statement of SqlitePetStore. */
export const SQLITE_QUERIES = ["insert_pet", "get_pet", "list_pets", "list_pets_by_status"] as const;
export type SqliteQuery = (typeof SQLITE_QUERIES)[number];

/** The gateway's buckets (gateway/metrics.ts), so the two processes' latencies compare directly. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** `defaultMetrics` (process CPU, memory, event loop lag, GC…): main only, once per process. */
export function createPetServiceMetrics(opts: { defaultMetrics?: boolean } = {}): PetServiceMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    grpcHandled: new Counter({
      name: "pet_service_grpc_server_handled_total",
      help: "PetService calls completed, by RPC method and gRPC status code.",
      labelNames: ["method", "code"],
      registers,
    }),
    grpcDuration: new Histogram({
      name: "pet_service_grpc_server_duration_seconds",
      help: "PetService call latency in the handler (validation, storage, mapping), by RPC method and gRPC status code.",
      labelNames: ["method", "code"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sqliteQueryDuration: new Histogram({
      name: "pet_service_sqlite_query_duration_seconds",
      help: "SQLite statement latency including the wait for the database (busy_timeout, queueing), by query name.",
      labelNames: ["query"],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    storageFaults: new Counter({
      name: "pet_service_storage_faults_total",
      help: "Calls answered UNAVAILABLE because the storage could not serve them (disk_full, read_only, io_error, busy, unreachable).",
      labelNames: ["fault"],
      registers,
    }),
    sqliteWritesPerCommit: new Histogram({
      name: "pet_service_sqlite_writes_per_commit",
      help: "Creates committed together in one SQLite transaction (group commit: one fsync for all of them).",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers,
    }),
  };
}
