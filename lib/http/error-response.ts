import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "../logger.ts";
import { ApiError, type ErrorCode } from "./errors.ts";

/**
 * Writes an Error body. Every error response of the gateway and the key service goes through here. A 503 always says
 * when to retry (RFC 9110 §10.2.3): the thrower's advice (the pet service's, the limiter's), else 1 s.
 */
export function sendError(res: Response, err: ApiError): void {
  if (err.status === 503 && !res.hasHeader("Retry-After")) res.setHeader("Retry-After", String(err.retryAfterSeconds ?? 1));
  res.status(err.status).type("application/json").send(JSON.stringify(err.toBody()));
}

/** body-parser / router errors carry an HTTP status; keep the client's 4xx, never its text. */
const HTTP_ERROR_CODES: Readonly<Record<number, ErrorCode>> = {
  413: "payload_too_large",
  415: "unsupported_media_type",
};

/** What Express, body-parser and the router throw, as one of our coded errors; anything else is a 500 with no detail. */
export function fromThrown(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    // The router's decodeURIComponent of a path parameter (`/v1/pets/%zz`, `/v1/pets/%ff`).
    if (err instanceof URIError) return new ApiError("invalid_request", "The request path is not valid percent-encoded UTF-8.");
    if ((err as { type?: unknown }).type === "encoding.unsupported") {
      return new ApiError("unsupported_media_type", "Unsupported Content-Encoding; send the body uncompressed, or gzip, deflate or br.");
    }
    return new ApiError(HTTP_ERROR_CODES[status] ?? "invalid_request");
  }
  return new ApiError("internal_error");
}

/** The last handler of an Express app: anything thrown becomes an Error body (`classify` says which); a 5xx is logged, never sent with detail. */
export function handleErrors(logger: Logger, classify: (err: unknown) => ApiError = fromThrown): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const apiError = classify(err);
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
