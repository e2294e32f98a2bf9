import * as grpc from "@grpc/grpc-js";
import { badRequestMetadata, errorInfoMetadata, PETSTORE_ERROR_DOMAIN } from "../lib/grpc-status-details.js";
import type { FieldViolation } from "./rules.js";
import type { StorageFault } from "./store/pet-store.js";

/**
 * The errors the pet service answers with. INVALID_ARGUMENT carries google.rpc.Status with a
 * google.rpc.BadRequest in `grpc-status-details-bin` (the gRPC richer error model), so any
 * client (grpcurl, Go's status.FromError, …) can read each offending field.
 */
export class RpcError extends Error {
  readonly details: string;

  constructor(
    readonly code: grpc.status,
    message: string,
    readonly metadata = new grpc.Metadata(),
  ) {
    super(message);
    this.name = "RpcError";
    this.details = message;
  }
}

export function invalidArgument(violations: FieldViolation[]): RpcError {
  const message = violations.map((v) => v.description).join("; ");
  return new RpcError(grpc.status.INVALID_ARGUMENT, message, badRequestMetadata(grpc.status.INVALID_ARGUMENT, message, violations));
}

/** google.rpc.ErrorInfo reason (domain petstore.v1) of a request_id reused for another request. */
export const IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED";

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
    errorInfoMetadata(code, message, { reason: IDEMPOTENCY_KEY_REUSED, domain: PETSTORE_ERROR_DOMAIN, metadata: { field: "request_id" } }),
  );
}

/** google.rpc.ErrorInfo reason (domain petstore.v1) of a call refused because storage cannot serve now. */
export const STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE";

const FAULT_MESSAGES: Readonly<Record<StorageFault, string>> = {
  unreachable: "the database cannot be reached",
  read_only: "the database is read-only",
  disk_full: "the database's disk is full",
};

/**
 * Storage that cannot serve now (StoreUnavailableError): UNAVAILABLE, the status gRPC clients
 * retry and the gateway answers with 503 service_unavailable + Retry-After. The ErrorInfo carries
 * the fault (metadata `fault`) for operators (the gateway's /readyz names it); no driver detail.
 */
export function storageUnavailable(fault: StorageFault): RpcError {
  const message = `storage unavailable: ${FAULT_MESSAGES[fault]}; retry later`;
  const code = grpc.status.UNAVAILABLE;
  return new RpcError(code, message, errorInfoMetadata(code, message, { reason: STORAGE_UNAVAILABLE, domain: PETSTORE_ERROR_DOMAIN, metadata: { fault } }));
}

export function notFound(message: string): RpcError {
  return new RpcError(grpc.status.NOT_FOUND, message);
}

/** What a caller sees of a failure we did not foresee: no SQL, no paths, no stack. */
export function internal(): RpcError {
  return new RpcError(grpc.status.INTERNAL, "internal error");
}

export { fieldViolationsOf, STATUS_DETAILS_KEY } from "../lib/grpc-status-details.js";
