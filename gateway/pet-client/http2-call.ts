import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import type { Http2Connection } from "./http2-connection.ts";
import { serviceError } from "./service-error.ts";
import type { CallMetadata } from "./transport.ts";

/**
 * One unary gRPC call on an HTTP/2 session (gRPC over HTTP/2, PROTOCOL-HTTP2.md), with the
 * statuses grpc-js gives each way a call can end: the server's grpc-status and grpc-message (in
 * trailers, or alone in the response headers: "trailers-only"), its other trailers as the error's
 * metadata (grpc-status-details-bin included), a non-200 HTTP status mapped as grpc-js maps it, a
 * reset stream or a lost connection (UNAVAILABLE), the deadline (DEADLINE_EXCEEDED, the stream
 * cancelled; the server learns it from grpc-timeout), a reply over the size limit
 * (RESOURCE_EXHAUSTED).
 */

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INADEQUATE_SECURITY, NGHTTP2_NO_ERROR } = http2.constants;
const END_STREAM = http2.constants.NGHTTP2_FLAG_END_STREAM;

/**
 * Headers whose value is new on every call: sent as HPACK "never indexed" literals, so they
 * neither fill both sides' header tables nor push out the headers every call repeats (the path,
 * content-type, te, user-agent), which would then travel as literals again.
 */
const UNIQUE_PER_CALL = ["x-request-id", "traceparent"];

export interface UnaryCall {
  connection: Http2Connection;
  /** "/package.Service/Method" */
  path: string;
  message: Buffer;
  metadata: CallMetadata;
  /** Epoch ms. */
  deadline: number;
  maxReceiveMessageBytes: number;
  userAgent: string;
}

/** The grpc-timeout value for what is left until `deadline`: at most 8 digits (gRPC's limit), in the finest unit that fits. */
function grpcTimeout(deadline: number): string {
  const ms = Math.max(1, Math.ceil(deadline - Date.now()));
  return ms < 1e8 ? `${ms}m` : `${Math.min(Math.ceil(ms / 1000), 99_999_999)}S`;
}

function mapHttpStatus(code: number): grpc.status {
  switch (code) {
    case 400:
      return grpc.status.INTERNAL;
    case 401:
      return grpc.status.UNAUTHENTICATED;
    case 403:
      return grpc.status.PERMISSION_DENIED;
    case 404:
      return grpc.status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return grpc.status.UNAVAILABLE;
    default:
      return grpc.status.UNKNOWN;
  }
}

function decodeMessage(text: string): string {
  try {
    return decodeURI(text);
  } catch {
    return text;
  }
}

/** The status a stream closed without one ends with, as grpc-js reports it. */
function resetStatus(rstCode: number, connectionLost: string | undefined): { code: grpc.status; details: string } {
  if (connectionLost !== undefined) return { code: grpc.status.UNAVAILABLE, details: connectionLost };
  switch (rstCode) {
    case NGHTTP2_NO_ERROR:
      return { code: grpc.status.INTERNAL, details: `Received RST_STREAM with code ${rstCode} (Call ended without gRPC status)` };
    case NGHTTP2_REFUSED_STREAM:
      return { code: grpc.status.UNAVAILABLE, details: "Stream refused by server" };
    case NGHTTP2_CANCEL:
      return { code: grpc.status.CANCELLED, details: "Call cancelled" };
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return { code: grpc.status.RESOURCE_EXHAUSTED, details: "Bandwidth exhausted or memory limit exceeded" };
    case NGHTTP2_INADEQUATE_SECURITY:
      return { code: grpc.status.PERMISSION_DENIED, details: "Protocol not secure enough" };
    default:
      return { code: grpc.status.INTERNAL, details: `Received RST_STREAM with code ${rstCode}` };
  }
}

/** Sends one request message and resolves with the one reply message's bytes, or rejects with a grpc.ServiceError. */
export function unaryCall(call: UnaryCall): Promise<Buffer> {
  const { connection } = call;
  const session = connection.session!;
  const frame = Buffer.allocUnsafe(5 + call.message.length);
  frame[0] = 0;
  frame.writeUInt32BE(call.message.length, 1);
  call.message.copy(frame, 5);

  return new Promise<Buffer>((resolve, reject) => {
    let stream: http2.ClientHttp2Stream;
    try {
      stream = session.request(
        {
          ":method": "POST",
          ":path": call.path,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": grpcTimeout(call.deadline),
          "grpc-accept-encoding": "identity",
          "user-agent": call.userAgent,
          ...call.metadata,
          [http2.sensitiveHeaders]: UNIQUE_PER_CALL,
        },
        { endStream: false },
      );
    } catch (err) {
      // The session closed or got GOAWAY between the pick and the call: the call never left
      // (UNAVAILABLE, retried). Otherwise Node refused a header: metadata no retry can fix.
      const gone = session.closed || session.destroyed;
      reject(serviceError(gone ? grpc.status.UNAVAILABLE : grpc.status.INTERNAL, (err as Error).message));
      return;
    }
    connection.callStarted();
    let done = false;
    let chunks: Buffer[] | undefined;
    let first: Buffer | undefined;
    let received = 0;
    let httpStatus = 0;
    let connectionLost: string | undefined;
    const timer = setTimeout(() => fail(grpc.status.DEADLINE_EXCEEDED, "Deadline exceeded"), Math.max(0, call.deadline - Date.now()));

    function finish(): void {
      done = true;
      clearTimeout(timer);
      connection.callEnded(session);
    }
    /** Ends the call with an error of our own, cancelling the stream. */
    function fail(code: grpc.status, details: string, metadata?: grpc.Metadata): void {
      if (done) return;
      finish();
      if (!stream.closed) stream.close(NGHTTP2_CANCEL);
      reject(serviceError(code, details, metadata));
    }
    function status(headers: http2.IncomingHttpHeaders): void {
      if (done) return;
      const code = Number(headers["grpc-status"]);
      const details = typeof headers["grpc-message"] === "string" ? decodeMessage(headers["grpc-message"]) : "";
      if (headers["grpc-status"] === undefined) {
        fail(httpStatus !== 200 ? mapHttpStatus(httpStatus) : grpc.status.UNKNOWN, httpStatus !== 200 ? `Received HTTP status code ${httpStatus}` : "No status information received");
        return;
      }
      if (code !== grpc.status.OK) {
        fail(code, details, trailerMetadata(headers));
        return;
      }
      const reply = message();
      if (typeof reply === "string") fail(grpc.status.UNIMPLEMENTED, reply, trailerMetadata(headers));
      else {
        finish();
        resolve(reply);
      }
    }
    /** The one message the reply carried, or why it did not carry exactly one. */
    function message(): Buffer | string {
      const bytes = chunks ? Buffer.concat(chunks) : first;
      if (!bytes || bytes.length === 0) return "No message received";
      if (bytes.length < 5) return "Incomplete message received";
      const length = bytes.readUInt32BE(1);
      if (bytes.length > 5 + length) return "Too many responses received";
      return bytes.subarray(5, 5 + length);
    }

    stream.on("response", (headers, flags) => {
      httpStatus = Number(headers[":status"]);
      if (httpStatus !== 200) {
        fail(mapHttpStatus(httpStatus), `Received HTTP status code ${httpStatus}`);
        return;
      }
      if (flags & END_STREAM) status(headers); // trailers-only
    });
    stream.on("data", (chunk: Buffer) => {
      if (done) return;
      if (first === undefined) first = chunk;
      else (chunks ??= [first]).push(chunk);
      received += chunk.length;
      if (received >= 5) {
        const head = first.length >= 5 ? first : Buffer.concat(chunks!);
        if (head[0] !== 0) fail(grpc.status.INTERNAL, "Received a compressed message without grpc-encoding");
        else if (head.readUInt32BE(1) > call.maxReceiveMessageBytes) {
          fail(grpc.status.RESOURCE_EXHAUSTED, `Received message larger than max (${head.readUInt32BE(1)} vs. ${call.maxReceiveMessageBytes})`);
        }
      }
    });
    stream.on("trailers", (headers) => status(headers));
    stream.on("error", (err: Error & { code?: string }) => {
      // A stream error with the session going down is a lost connection; the close event ends the call.
      if (err.code !== "ERR_HTTP2_STREAM_ERROR") connectionLost = err.message;
    });
    stream.on("close", () => {
      if (done) return;
      if (session.destroyed || session.closed) connectionLost ??= connection.lastError || "Connection dropped";
      const ended = resetStatus(stream.rstCode ?? NGHTTP2_NO_ERROR, connectionLost);
      fail(ended.code, ended.details);
    });
    stream.end(frame);
  });
}

/** The trailers a client sees as metadata: everything but HTTP/2's and gRPC's own fields. */
function trailerMetadata(headers: http2.IncomingHttpHeaders): grpc.Metadata {
  const rest: http2.IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(":") && name !== "grpc-status" && name !== "grpc-message" && name !== "content-type" && name !== "date") rest[name] = value;
  }
  try {
    return grpc.Metadata.fromHttp2Headers(rest);
  } catch {
    return new grpc.Metadata();
  }
}
