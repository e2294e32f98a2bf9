import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { createMetricsRegistry } from "../lib/metrics-registry.ts";

/**
 * The pet service's Prometheus metrics, on a registry of their own (lib/metrics-registry.ts).
 * Served on METRICS_PORT (pet-service/metrics-server.ts).
 */
export interface PetServiceMetrics {
  registry: Registry;
  /**
   * Every PetService call by RPC method, the gRPC status code it was answered with, and its
   * caller (the client certificate's common name over mTLS, bounded; else "anonymous").
   */
  grpcHandled: Counter<"method" | "code" | "caller">;
  grpcDuration: Histogram<"method" | "code" | "caller">;
  /** Each SQLite statement by a fixed query name (SQLITE_QUERIES), never by its SQL text. */
  sqliteQueryDuration: Histogram<"query">;
  /** Creates committed per SQLite transaction (group commit: one fsync for all of them). */
  sqliteWritesPerCommit: Histogram;
  /** Calls answered UNAVAILABLE because the storage could not serve them, by fault (STORAGE_FAULTS). */
  storageFaults: Counter<"fault">;
  /** Each PostgreSQL statement by a fixed query name (POSTGRES_QUERIES), never by its SQL text. */
  postgresQueryDuration: Histogram<"query">;
  /** Connections of the PostgreSQL pool by state (total, idle, and callers waiting for one), read at scrape time. */
  postgresPoolConnections: Gauge<"state">;
  /** Names the pool the gauge above reads (PostgresPetStore calls it at open). */
  observePostgresPool(read: () => PoolCounts): void;
}

export interface PoolCounts {
  total: number;
  idle: number;
  waiting: number;
}

/** The `query` label values: one per prepared statement of SqlitePetStore. */
export const SQLITE_QUERIES = ["insert_pet", "get_pet", "list_pets", "list_pets_by_status"] as const;
export type SqliteQuery = (typeof SQLITE_QUERIES)[number];

/** The `query` label values of PostgresPetStore: the SQLite names, plus the idempotent create's two. */
export const POSTGRES_QUERIES = ["insert_pet", "insert_pet_once", "find_idempotency_key", "get_pet", "list_pets", "list_pets_by_status", "ping"] as const;
export type PostgresQuery = (typeof POSTGRES_QUERIES)[number];

/** `defaultMetrics` (process CPU, memory, event loop lag, GC…): main only, once per process. */
export function createPetServiceMetrics(opts: { defaultMetrics?: boolean } = {}): PetServiceMetrics {
  const m = createMetricsRegistry(opts);
  let readPool: (() => PoolCounts) | undefined;
  return {
    registry: m.registry,
    grpcHandled: m.counter({
      name: "pet_service_grpc_server_handled_total",
      help: "PetService calls completed, by RPC method, gRPC status code and caller (client certificate's common name over mTLS, else anonymous).",
      labelNames: ["method", "code", "caller"],
    }),
    grpcDuration: m.latency({
      name: "pet_service_grpc_server_duration_seconds",
      help: "PetService call latency in the handler (validation, storage, mapping), by RPC method, gRPC status code and caller.",
      labelNames: ["method", "code", "caller"],
    }),
    sqliteQueryDuration: m.latency({
      name: "pet_service_sqlite_query_duration_seconds",
      help: "SQLite statement latency including the wait for the database (busy_timeout, queueing), by query name.",
      labelNames: ["query"],
    }),
    storageFaults: m.counter({
      name: "pet_service_storage_faults_total",
      help: "Calls answered UNAVAILABLE because the storage could not serve them (disk_full, read_only, io_error, busy, unreachable).",
      labelNames: ["fault"],
    }),
    sqliteWritesPerCommit: m.histogram({
      name: "pet_service_sqlite_writes_per_commit",
      help: "Creates committed together in one SQLite transaction (group commit: one fsync for all of them).",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    }),
    postgresQueryDuration: m.latency({
      name: "pet_service_postgres_query_duration_seconds",
      help: "PostgreSQL statement latency including the wait for a pool connection, by query name.",
      labelNames: ["query"],
    }),
    postgresPoolConnections: m.gauge({
      name: "pet_service_postgres_pool_connections",
      help: "PostgreSQL pool: open connections (total), idle ones, and calls waiting for one (waiting).",
      labelNames: ["state"],
      collect() {
        const counts = readPool?.();
        if (!counts) return;
        for (const state of ["total", "idle", "waiting"] as const) this.set({ state }, counts[state]);
      },
    }),
    observePostgresPool(read) {
      readPool = read;
    },
  };
}
