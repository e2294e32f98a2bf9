import type pg from "pg";

/**
 * Connection settings of every pool of ours (the pet store's, the key registry's): a connection
 * that cannot be made within 2 s fails (the database is unreachable: fail fast, never queue for
 * ever); a statement waits at most 3 s for a lock another session holds (then the write is
 * refused as `busy`, as SQLite's busy_timeout does) and runs at most 5 s on the server, and the
 * client gives up on an answer after 6 s (a network that swallows packets). TCP keepalive finds
 * dead connections between queries. `applicationName` shows in pg_stat_activity.
 */
export const postgresPoolSettings = (applicationName: string) =>
  ({
    connectionTimeoutMillis: 2_000,
    idleTimeoutMillis: 30_000,
    lock_timeout: 3_000,
    statement_timeout: 5_000,
    query_timeout: 6_000,
    keepAlive: true,
    application_name: applicationName,
  }) as const satisfies pg.PoolConfig;
