import { status as GrpcStatus } from "@grpc/grpc-js";
import { IDEMPOTENCY_KEY_REUSED } from "../../lib/grpc-status-details.ts";
import type { ErrorCode } from "../../lib/http/errors.ts";

export interface GrpcMapping {
  code: ErrorCode;
  passMessage: boolean;
  /**
   * google.rpc.ErrorInfo reasons (domain petstore.v1) that name a more precise code than the
   * status alone; any other reason, or none, gets `code`.
   */
  reasons?: ReadonlyMap<string, ErrorCode>;
}

/**
 * gRPC status → HTTP error (google/rpc/code.proto mapping, as grpc-gateway and Envoy use it).
 * `passMessage` says whether the pet service's message is safe and useful to show a client:
 * only for the statuses that describe the client's own request.
 */
export const GRPC_TO_HTTP: Readonly<Record<number, GrpcMapping>> = {
  [GrpcStatus.INVALID_ARGUMENT]: { code: "invalid_request", passMessage: true },
  [GrpcStatus.OUT_OF_RANGE]: { code: "invalid_request", passMessage: true },
  // An idempotency key reused for another request is 422, as draft-ietf-httpapi-idempotency-key-header says.
  [GrpcStatus.FAILED_PRECONDITION]: {
    code: "invalid_request",
    passMessage: true,
    reasons: new Map([[IDEMPOTENCY_KEY_REUSED, "idempotency_key_reused"]]),
  },
  [GrpcStatus.UNAUTHENTICATED]: { code: "unauthorized", passMessage: false },
  [GrpcStatus.PERMISSION_DENIED]: { code: "forbidden", passMessage: false },
  [GrpcStatus.NOT_FOUND]: { code: "not_found", passMessage: true },
  [GrpcStatus.ALREADY_EXISTS]: { code: "conflict", passMessage: true },
  [GrpcStatus.ABORTED]: { code: "conflict", passMessage: true },
  [GrpcStatus.RESOURCE_EXHAUSTED]: { code: "rate_limited", passMessage: false },
  [GrpcStatus.CANCELLED]: { code: "client_closed_request", passMessage: false },
  [GrpcStatus.UNIMPLEMENTED]: { code: "not_implemented", passMessage: false },
  [GrpcStatus.UNAVAILABLE]: { code: "service_unavailable", passMessage: false },
  [GrpcStatus.DEADLINE_EXCEEDED]: { code: "upstream_timeout", passMessage: false },
};

/** Every status not in the table (UNKNOWN, INTERNAL, DATA_LOSS, …) is a 500 with no internals. */
export const GRPC_FALLBACK: GrpcMapping = { code: "internal_error", passMessage: false };
