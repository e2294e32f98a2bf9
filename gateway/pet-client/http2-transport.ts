import { unaryCall } from "./http2-call.ts";
import { Http2Channel } from "./http2-channel.ts";
import { DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, type PetTransport, type TransportOptions } from "./transport.ts";

const USER_AGENT = `petstore-gateway node/${process.versions.node}`;

/**
 * PetService calls made directly on node:http2 sessions (http2-channel.ts, http2-call.ts), with
 * the generated codecs: what grpc-js does for a unary call, without its per-call filter stack,
 * interceptors, call objects and event chains (docs/scaling.md, "The gateway's gRPC client").
 */
export function createHttp2Transport(opts: TransportOptions): PetTransport {
  const channel = new Http2Channel(opts.address, { ...opts.connection, ...(opts.tls && { tls: opts.tls }) });
  const maxReceiveMessageBytes = opts.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES;
  return {
    async unary(method, request, metadata, deadline) {
      const message = method.encode(request);
      const picked = channel.pick(deadline);
      const connection = picked instanceof Promise ? await picked : picked;
      const reply = await unaryCall({ connection, path: method.path, message, metadata, deadline, maxReceiveMessageBytes, userAgent: USER_AGENT });
      return method.decode(reply);
    },
    close: () => channel.close(),
  };
}
