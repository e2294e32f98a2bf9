import { accessSync, closeSync, constants, openSync, rmSync } from "node:fs";
import path from "node:path";
import { withResultCode } from "./sqlite.ts";
import { StorageUnavailableError, type StorageFault } from "./storage-faults.ts";

/**
 * SQLite's primary result codes (by name: lib/sqlite.ts) that mean the storage cannot
 * serve now rather than a bug: SQLITE_FULL (no space for the database, its WAL or journal),
 * SQLITE_READONLY, SQLITE_IOERR (a failing or read-only file system: a write refused with EROFS
 * is reported as an I/O error), SQLITE_BUSY/LOCKED (another connection held the lock past
 * busy_timeout), SQLITE_CANTOPEN (the file or its directory is gone or unreachable).
 */
const FAULTS: Readonly<Record<string, StorageFault>> = {
  SQLITE_FULL: "disk_full",
  SQLITE_READONLY: "read_only",
  SQLITE_IOERR: "io_error",
  SQLITE_BUSY: "busy",
  SQLITE_LOCKED: "busy",
  SQLITE_CANTOPEN: "unreachable",
};

/**
 * `err` as a StorageUnavailableError when SQLite reported a storage fault, else unchanged. An I/O
 * error on a file system that refuses writes (EROFS) is reported as read_only.
 */
export function toStorageError(err: unknown, databaseDir: string): unknown {
  const fault = FAULTS[String((withResultCode(err) as { code?: unknown } | null)?.code)];
  if (!fault) return err;
  return new StorageUnavailableError(fault === "io_error" && isReadOnlyFileSystem(databaseDir) ? "read_only" : fault, { cause: err });
}

/**
 * Whether `dir`'s file system refuses writes. access(2) sees a read-only mount; ext4's emergency
 * read-only state after an error (errors=remount-ro) it does not, so a file is created too.
 */
function isReadOnlyFileSystem(dir: string): boolean {
  const probe = path.join(dir, ".write-probe");
  try {
    accessSync(dir, constants.W_OK);
    closeSync(openSync(probe, "w"));
    rmSync(probe, { force: true });
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EROFS";
  }
}
