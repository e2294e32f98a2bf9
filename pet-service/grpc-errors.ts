import * as grpc from "@grpc/grpc-js";
import { IDEMPOTENCY_KEY_REUSED, PETSTORE_ERROR_DOMAIN, STORAGE_UNAVAILABLE, statusDetailsMetadata, type FieldViolation } from "../lib/grpc-status-details.ts";
import type { StorageFault } from "../lib/storage-faults.ts";

/**
 * The errors the pet service answers with. INVALID_ARGUMENT carries google.rpc.Status with a
 * google.rpc.BadRequest in `grpc-status-details-bin` (the gRPC richer error model), so any
 * client (grpcurl, Go's status.FromError, …) can read each offending field.
 */
export class RpcError extends Error {
  readonly details: string;

  readonly code: grpc.status;
  readonly metadata: grpc.Metadata;

  constructor(code: grpc.status, message: string, metadata = new grpc.Metadata()) {
    super(message);
    this.code = code;
    this.metadata = metadata;
    this.name = "RpcError";
    this.details = message;
  }
}

export function invalidArgument(violations: FieldViolation[]): RpcError {
  const message = violations.map((v) => v.description).join("; ");
  return new RpcError(grpc.status.INVALID_ARGUMENT, message, statusDetailsMetadata(grpc.status.INVALID_ARGUMENT, message, { violations }));
}

/**
 * A request_id still bound to a different CreatePet request. FAILED_PRECONDITION: the request is
 * valid in itself but the system's state (the key's binding) forbids it until the key expires,
 * and retrying it unchanged cannot succeed. The ErrorInfo reason lets callers tell it from other
 * failed preconditions (the gateway answers 422 idempotency_key_reused).
 */
export function idempotencyKeyReused(ttlHours: number): RpcError {
  const message =
    `request_id was already used in the last ${ttlHours} hours for a different request ` +
    "(name, category_id or status differ); send the original request again, or use a new request_id";
  const code = grpc.status.FAILED_PRECONDITION;
  return new RpcError(
    code,
    message,
    statusDetailsMetadata(code, message, {
      errorInfo: { reason: IDEMPOTENCY_KEY_REUSED, domain: PETSTORE_ERROR_DOMAIN, metadata: { field: "request_id" } },
    }),
  );
}

/**
 * How long a client is advised (google.rpc.RetryInfo, the gateway's Retry-After) to wait after a
 * storage fault: an unreachable database is usually a restart or a failover, back within
 * seconds; a full or read-only disk, a failing device or a long-held lock wait for an operator.
 */
const STORAGE_RETRY_DELAY_MS: Readonly<Record<StorageFault, number>> = {
  unreachable: 2_000,
  busy: 5_000,
  disk_full: 5_000,
  read_only: 5_000,
  io_error: 5_000,
};

const FAULT_MESSAGES: Readonly<Record<StorageFault, string>> = {
  unreachable: "the database cannot be reached",
  busy: "the database is busy (a lock, a timeout or every connection in use)",
  disk_full: "the database's disk is full",
  read_only: "the database is read-only",
  io_error: "the database's storage is failing",
};

/**
 * The storage cannot serve the call now (StorageUnavailableError): UNAVAILABLE, which says a
 * retry may succeed (the gateway answers 503 service_unavailable), with the fault in ErrorInfo
 * metadata (the gateway's /readyz names it) and the advised wait in RetryInfo (the gateway's
 * Retry-After). Nothing of the driver's own message.
 */
export function storageUnavailable(fault: StorageFault): RpcError {
  const code = grpc.status.UNAVAILABLE;
  const message = `storage unavailable: ${FAULT_MESSAGES[fault]}; retry later`;
  return new RpcError(
    code,
    message,
    statusDetailsMetadata(code, message, {
      errorInfo: { reason: STORAGE_UNAVAILABLE, domain: PETSTORE_ERROR_DOMAIN, metadata: { fault } },
      retryDelayMs: STORAGE_RETRY_DELAY_MS[fault],
    }),
  );
}

export function notFound(message: string): RpcError {
  return new RpcError(grpc.status.NOT_FOUND, message);
}

/** What a caller sees of a failure we did not foresee: no SQL, no paths, no stack. */
export function internal(): RpcError {
  return new RpcError(grpc.status.INTERNAL, "internal error");
}

export { fieldViolationsOf, STATUS_DETAILS_KEY } from "../lib/grpc-status-details.ts";
