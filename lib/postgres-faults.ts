import { StorageUnavailableError, type StorageFault } from "./storage-faults.ts";

/** Socket errors of the connection to PostgreSQL: the server (or the way to it) is gone for now. */
const NETWORK_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);

/** SQLSTATEs (PostgreSQL appendix A) that waiting may cure. */
const SQLSTATE_FAULTS: Readonly<Record<string, StorageFault>> = {
  "53100": "disk_full",
  "25006": "read_only", // read_only_sql_transaction: a standby, or default_transaction_read_only
  "57P01": "unreachable", // admin_shutdown
  "57P02": "unreachable", // crash_shutdown
  "57P03": "unreachable", // cannot_connect_now (starting up, recovering)
  "53300": "unreachable", // too_many_connections
  "55P03": "busy", // lock_not_available: another session held a lock past lock_timeout
  "40P01": "busy", // deadlock_detected: PostgreSQL rolled this transaction back; a retry can succeed
  "40001": "busy", // serialization_failure: likewise
  "57014": "busy", // query_canceled: statement_timeout (the server could not finish it in time), or an operator's cancel
};

/**
 * Messages node-postgres gives its own errors (no code): a connection lost mid-query or not made
 * within connectionTimeoutMillis ("Connection terminated due to connection timeout"), a query
 * whose answer never came (query_timeout).
 */
const DRIVER_MESSAGES = /^(Connection terminated|Query read timeout|Client has encountered a connection error)/;

/**
 * pg-pool's error for a call that waited connectionTimeoutMillis for a pooled connection while
 * every one was in use: the database answers, the pool is saturated. Busy, not unreachable, which
 * would take the replica out of rotation and fail every call because of load.
 */
const POOL_WAIT_TIMEOUT = /^timeout exceeded when trying to connect/;

/** The storage fault `err` reports, if it is one (else a bug or bad data: not ours to retry). */
export function postgresFaultOf(err: unknown): StorageFault | undefined {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (NETWORK_ERRORS.has(code)) return "unreachable";
    // Class 08: connection exception.
    if (code.startsWith("08")) return "unreachable";
    if (code in SQLSTATE_FAULTS) return SQLSTATE_FAULTS[code];
  }
  if (typeof message === "string" && POOL_WAIT_TIMEOUT.test(message)) return "busy";
  if (typeof message === "string" && DRIVER_MESSAGES.test(message)) return "unreachable";
  return undefined;
}

/** `err` as StorageUnavailableError when it is a storage fault; unchanged otherwise. */
export function asStoreError(err: unknown): unknown {
  const fault = postgresFaultOf(err);
  return fault ? new StorageUnavailableError(fault, { cause: err }) : err;
}
