/** Storage faults of every store of ours (the pet store, the key registry), SQLite or PostgreSQL. */
/**
 * Why the storage cannot serve an operation now. Each is a fault of the storage, not of the
 * request or of our code, and may clear by itself or by an operator's hand: retrying later helps.
 */
export const STORAGE_FAULTS = ["disk_full", "read_only", "io_error", "busy", "unreachable"] as const;
export type StorageFault = (typeof STORAGE_FAULTS)[number];

/**
 * Thrown by a store (any store: SQLite, PostgreSQL) when its storage cannot serve the operation
 * now: the disk is full, the file system read-only or failing, the database locked beyond the
 * wait or unreachable. The pet service answers UNAVAILABLE (the gateway 503 with Retry-After),
 * the key service 503; each counts it by fault; anything else a store throws is a bug (INTERNAL). A write that fails
 * this way stored nothing, and the store serves again once the fault clears.
 */
export class StorageUnavailableError extends Error {
  override name = "StorageUnavailableError";

  readonly fault: StorageFault;

  constructor(fault: StorageFault, options?: ErrorOptions) {
    super(`storage unavailable (${fault})`, options);
    this.fault = fault;
  }
}
