import { DatabaseSync } from "node:sqlite";

/**
 * Every SQLite file of ours (the pet store; the key registry) through Node's built-in driver,
 * node:sqlite: maintained with Node itself, nothing to compile at install (chosen against
 * better-sqlite3 by measurement: docs/performance.md, "The SQLite driver"). It is synchronous: a
 * statement runs on the calling thread, so what may wait for a disk (a COMMIT's fsync, a lock)
 * runs in a worker thread (worker-calls.ts), and only short reads on a service's main thread.
 */

/** Waits this long for another connection's lock (a backup, an operator's shell) instead of failing at once. */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * WAL lets reads run beside the single writer. synchronous=FULL fsyncs the WAL on every commit,
 * so an acknowledged write survives not only a killed process (NORMAL would do for that) but
 * also an OS crash or power loss; the cost is one fsync per commit (shared by a group commit).
 * journal_mode is kept in the file; synchronous is per connection: every writer sets it.
 */
const DURABLE_WAL = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;";

export interface OpenSqliteOptions {
  /** Opens an existing file for reading only (default: read-write, created when missing). */
  readOnly?: boolean;
  /** INTEGER columns as bigint (exact over int64) instead of numbers (rounded above 2^53). */
  readBigInts?: boolean;
}

/**
 * Opens `file` with a busy timeout. Foreign keys stay unenforced, as SQLite's default is (and
 * node-sqlite3's was): our schemas keep their references by transaction, not by the engine.
 */
export function openSqlite(file: string, { readOnly = false, readBigInts = false }: OpenSqliteOptions = {}): DatabaseSync {
  try {
    return new DatabaseSync(file, { readOnly, readBigInts, timeout: BUSY_TIMEOUT_MS, enableForeignKeyConstraints: false });
  } catch (err) {
    throw withResultCode(err);
  }
}

/** Opens `file` for writing in WAL mode, every commit fsynced (DURABLE_WAL). */
export function openDurableWriter(file: string, options: Omit<OpenSqliteOptions, "readOnly"> = {}): DatabaseSync {
  const db = openSqlite(file, options);
  try {
    db.exec(DURABLE_WAL);
  } catch (err) {
    db.close();
    throw withResultCode(err);
  }
  return db;
}

/** SQLite's primary result codes (the low byte of an extended one) by number. */
const RESULT_NAMES: Readonly<Record<number, string>> = {
  1: "SQLITE_ERROR",
  2: "SQLITE_INTERNAL",
  3: "SQLITE_PERM",
  4: "SQLITE_ABORT",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  7: "SQLITE_NOMEM",
  8: "SQLITE_READONLY",
  9: "SQLITE_INTERRUPT",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  13: "SQLITE_FULL",
  14: "SQLITE_CANTOPEN",
  15: "SQLITE_PROTOCOL",
  17: "SQLITE_SCHEMA",
  18: "SQLITE_TOOBIG",
  19: "SQLITE_CONSTRAINT",
  20: "SQLITE_MISMATCH",
  21: "SQLITE_MISUSE",
  23: "SQLITE_AUTH",
  25: "SQLITE_RANGE",
  26: "SQLITE_NOTADB",
};

/**
 * `err` with `code` set to SQLite's primary result code by name (SQLITE_FULL, SQLITE_CONSTRAINT…)
 * when SQLite raised it: node:sqlite's own code is ERR_SQLITE_ERROR for all of them, the result
 * code a number in `errcode`. Storage faults are told apart by this name.
 */
export function withResultCode(err: unknown): unknown {
  const errcode = (err as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode === "number") (err as { code: string }).code = RESULT_NAMES[errcode & 0xff] ?? `SQLITE_${errcode & 0xff}`;
  return err;
}
