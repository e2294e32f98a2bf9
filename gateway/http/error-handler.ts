import type { ErrorRequestHandler } from "express";
import type { Logger } from "../../lib/logger.ts";
import { errorInfoOf, fieldViolationsOf, PETSTORE_ERROR_DOMAIN, retryDelayOf } from "../../lib/grpc-status-details.ts";
import { ApiError, invalidRequest } from "../../lib/http/errors.ts";
import { GRPC_FALLBACK, GRPC_TO_HTTP } from "./grpc-status.ts";
import { isGrpcError } from "../pet-client/pet-client.ts";
import { fromThrown, handleErrors } from "../../lib/http/error-response.ts";
import { renameFields, toHttpViolation } from "./pet-mapping.ts";

/** Turns anything thrown while serving into one of our coded errors. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isGrpcError(err)) {
    const mapped = GRPC_TO_HTTP[err.code] ?? GRPC_FALLBACK;
    const info = mapped.reasons && errorInfoOf(err);
    const code = (info?.domain === PETSTORE_ERROR_DOMAIN && mapped.reasons?.get(info.reason)) || mapped.code;
    if (!mapped.passMessage) {
      const apiError = new ApiError(code);
      const retryDelayMs = retryDelayOf(err); // google.rpc.RetryInfo, e.g. on a storage fault
      if (retryDelayMs !== undefined) apiError.retryAfterSeconds = Math.max(1, Math.ceil(retryDelayMs / 1000));
      return apiError;
    }
    const violations = fieldViolationsOf(err).map(toHttpViolation);
    return violations.length ? invalidRequest(violations) : new ApiError(code, renameFields(err.details));
  }
  return fromThrown(err);
}

/** The gateway's error handler: gRPC errors mapped as DESIGN's HTTP ↔ gRPC says. */
export const errorHandler = (logger: Logger): ErrorRequestHandler => handleErrors(logger, toApiError);
