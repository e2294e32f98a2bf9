import http2 from "node:http2";
import type { AddressInfo } from "node:net";

/**
 * An HTTP/2 server on loopback that answers gRPC requests however the test writes them, for what
 * a grpc-js server never sends on its own: a status in trailers after response headers, a
 * non-gRPC HTTP error, GOAWAY on demand, a reply that never comes. Counts the PING frames it
 * receives (keepalive) and the connections made to it.
 */
export interface RawGrpcServer {
  address: string;
  port: number;
  /** PING frames received so far (over every connection). */
  pings(): number;
  /** Connections accepted so far. */
  connections(): number;
  /** How each request is answered (its stream and request headers); replaceable. */
  respond: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;
  /** GOAWAY on every open connection. */
  goaway(): void;
  close(): Promise<void>;
}

/** A gRPC frame (uncompressed) around `message`. */
export function grpcMessageFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

/** Response headers, one message, then trailers with `trailers` (grpc-status etc.). */
export function answerWith(stream: http2.ServerHttp2Stream, message: Buffer | undefined, trailers: http2.OutgoingHttpHeaders): void {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(message && grpcMessageFrame(message));
}

export async function startRawGrpcServer(host = "127.0.0.1"): Promise<RawGrpcServer> {
  let pings = 0;
  let connections = 0;
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  const raw: RawGrpcServer = {
    address: "",
    port: 0,
    pings: () => pings,
    connections: () => connections,
    respond: (stream) => stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, { endStream: true }),
    goaway: () => sessions.forEach((s) => s.goaway()),
    close: () =>
      new Promise((resolve) => {
        sessions.forEach((s) => s.destroy());
        server.close(() => resolve());
      }),
  };
  server.on("session", (session) => {
    connections++;
    sessions.add(session);
    session.on("ping", () => pings++);
    session.on("close", () => sessions.delete(session));
    session.on("error", () => {});
  });
  server.on("stream", (stream: http2.ServerHttp2Stream, headers) => {
    stream.on("error", () => {});
    // The request body is read (and dropped) so the client's END_STREAM is seen.
    stream.resume();
    raw.respond(stream, headers);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  raw.port = (server.address() as AddressInfo).port;
  raw.address = `${host}:${raw.port}`;
  return raw;
}
