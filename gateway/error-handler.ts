import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "../lib/logger.js";
import { fieldViolationsOf } from "../lib/grpc-status-details.js";
import { ApiError, invalidRequest, type ErrorCode } from "./errors.js";
import { GRPC_FALLBACK, GRPC_TO_HTTP } from "./grpc-status.js";
import { isGrpcError } from "./pet-client.js";
import { renameFields, toHttpViolation } from "./pet-mapping.js";

/** Writes an Error body. Every error response of the gateway goes through here. */
export function sendError(res: Response, err: ApiError): void {
  res.status(err.status).type("application/json").send(JSON.stringify(err.toBody()));
}

/** body-parser / router errors carry an HTTP status; keep the client's 4xx, never its text. */
const HTTP_ERROR_CODES: Readonly<Record<number, ErrorCode>> = {
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** Turns anything thrown while serving into one of our coded errors. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isGrpcError(err)) {
    const mapped = GRPC_TO_HTTP[err.code] ?? GRPC_FALLBACK;
    if (!mapped.passMessage) return new ApiError(mapped.code);
    const violations = fieldViolationsOf(err).map(toHttpViolation);
    return violations.length ? invalidRequest(violations) : new ApiError(mapped.code, renameFields(err.details));
  }
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new ApiError(HTTP_ERROR_CODES[status] ?? "invalid_request");
  }
  return new ApiError("internal_error");
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500) {
      logger.error({ err, requestId: res.locals.requestId, method: req.method, path: req.path }, "request failed");
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(res, apiError);
  };
}
