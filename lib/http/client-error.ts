import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "../logger.ts";
import { ApiError } from "./errors.ts";
import { SECURITY_HEADERS } from "./request-context.ts";

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
