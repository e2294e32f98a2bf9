import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "../../lib/logger.ts";
import { errorInfoOf, fieldViolationsOf, PETSTORE_ERROR_DOMAIN, retryDelayOf } from "../../lib/grpc-status-details.ts";
import { ApiError, invalidRequest, type ErrorCode } from "./errors.ts";
import { GRPC_FALLBACK, GRPC_TO_HTTP } from "./grpc-status.ts";
import { isGrpcError } from "../pet-client/pet-client.ts";
import { SECURITY_HEADERS } from "./request-context.ts";
import { renameFields, toHttpViolation } from "./pet-mapping.ts";

/**
 * Writes an Error body. Every error response of the gateway goes through here. A 503 always says
 * when to retry (RFC 9110 §10.2.3): the pet service's advice, the limiter's, else 1 s.
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

/**
 * The Error for a request Node's HTTP parser refused before Express saw it: request line and
 * headers over maxHeaderSize, a malformed request line or header, Content-Length beside
 * Transfer-Encoding, a broken chunk, a request not received within requestTimeout.
 */
function clientErrorOf(err: { code?: unknown }): ApiError {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("header_fields_too_large");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new ApiError("payload_too_large", "The chunk extensions of the request body are too large.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_timeout");
    default:
      return new ApiError("invalid_request", "The request is not valid HTTP/1.1.");
  }
}

/**
 * How long a refused connection stays half-open after its answer, reading and dropping what the
 * client is still sending, before it is closed. Closing a socket with unread bytes makes the
 * kernel reset the connection, and a client still sending (a 1 MB header line) then often loses the
 * answer already on its way: it saw "connection reset" instead of the 431 in about 1 of 20 tries.
 * Go's net/http waits 500 ms the same way; nginx's lingering_timeout is 5 s.
 */
export const LINGER_MS = 2_000;

/**
 * The server's `clientError` listener: answers what Node's parser refuses with our Error body
 * instead of Node's empty `400`/`431`, then closes the connection (the parser cannot resync).
 * Like Node's default, it writes only when no response has started on the socket, so a
 * pipelined or half-written response is never corrupted. A refused request is answered, the
 * connection half-closed and closed LINGER_MS later at the latest; a timed-out one
 * (408) is closed at once, so a slow client is cut at its timeout. Wire it with
 * `server.on("clientError", clientErrorHandler(logger))`.
 */
export function clientErrorHandler(logger: Logger): (err: Error & { code?: unknown }, socket: Duplex) => void {
  /** Sockets already answered: the parser refuses each further chunk the client sends (45 calls for 1 s of a trickle). */
  const answered = new WeakSet<Duplex>();
  return (err, socket) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (err.code !== "ECONNRESET" && socket.writable && !inFlight?.headersSent) {
      const apiError = clientErrorOf(err);
      const body = JSON.stringify(apiError.toBody());
      socket.write(
        `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n` +
          "Content-Type: application/json; charset=utf-8\r\n" +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          Object.entries(SECURITY_HEADERS)
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join("") +
          "Connection: close\r\n\r\n" +
          body,
      );
    }
    logger.debug({ err: { code: err.code, message: err.message } }, "refused a malformed HTTP request");
    if (err.code === "ECONNRESET" || err.code === "ERR_HTTP_REQUEST_TIMEOUT" || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end();
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("close", () => clearTimeout(linger));
  };
}
