import * as grpc from "@grpc/grpc-js";
import { badRequestMetadata } from "../lib/grpc-status-details.js";
import type { FieldViolation } from "./rules.js";

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

export function notFound(message: string): RpcError {
  return new RpcError(grpc.status.NOT_FOUND, message);
}

/** What a caller sees of a failure we did not foresee: no SQL, no paths, no stack. */
export function internal(): RpcError {
  return new RpcError(grpc.status.INTERNAL, "internal error");
}

export { fieldViolationsOf, STATUS_DETAILS_KEY } from "../lib/grpc-status-details.js";
