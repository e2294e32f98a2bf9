import type { X509Certificate } from "node:crypto";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { listen } from "../lib/listen.ts";
import type { Logger } from "../lib/logger.ts";
import type { TlsMaterial, TlsSource } from "../lib/tls-files.ts";

/** Who called, from the verified client certificate of the call's connection (mTLS). */
export interface Caller {
  /** The certificate's subject, e.g. "CN=gateway, O=Pet Store" (log lines). */
  subject: string;
  /** Its common name (else the subject) for the `caller` metrics label; "other" past MAX_CALLER_LABELS. */
  label: string;
}

/** The `caller` label of calls without a client certificate (plaintext, or TLS without PET_SERVICE_TLS_CLIENT_CA). */
export const ANONYMOUS_CALLER = "anonymous";
/** Distinct `caller` label values, at most; later callers share "other", so a CA that issues many certificates cannot grow the series without bound. */
export const MAX_CALLER_LABELS = 20;

export interface TlsListener {
  port: number;
  /** The caller of a call, by its peer (grpc's call.getPeer(), "address:port" of its connection). */
  callerOf(peer: string): Caller | undefined;
  /** Stops accepting connections (open ones drain with the gRPC server). */
  close(): void;
}

/**
 * The pet service's TLS listener: a node:tls server of our own in front of the gRPC server (handed
 * each connection through grpc-js's connection injector), for two things grpc-js's bindAsync
 * does not offer cheaply:
 * - rotation: the current files go into every new handshake (setSecureContext on each change);
 * - identity: the client certificate's subject is read once per connection. grpc-js's
 *   call.getAuthContext() builds the whole peer certificate object on every call (about 200 µs).
 * With `requireClientCert` (PET_SERVICE_TLS_CLIENT_CA) a client without a certificate signed by
 * that CA is refused in the handshake, as is any plaintext client.
 */
export async function listenTls(
  server: grpc.Server,
  opts: { host: string; port: number; source: TlsSource; requireClientCert: boolean; logger: Logger },
): Promise<TlsListener> {
  const { source, requireClientCert, logger } = opts;
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const contextOf = (m: TlsMaterial) => ({ key: m.key, cert: m.cert, ...(requireClientCert && { ca: m.ca }) });
  const listener = tls.createServer({
    ...contextOf(source.current()),
    requestCert: requireClientCert,
    rejectUnauthorized: requireClientCert,
    ALPNProtocols: ["h2"],
  });
  const unsubscribe = source.onChange((material) => listener.setSecureContext(contextOf(material)));

  const callers = new Map<string, Caller>();
  const labelOf = callerLabels();
  listener.on("secureConnection", (socket: tls.TLSSocket) => {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const certificate = socket.authorized ? socket.getPeerX509Certificate() : undefined;
    if (certificate) {
      const subject = subjectOf(certificate);
      callers.set(peer, { subject, label: labelOf(commonNameOf(certificate) ?? subject) });
      socket.once("close", () => callers.delete(peer));
    }
    injector.injectConnection(socket);
  });
  // Plaintext clients, clients without a certificate, certificates of another CA: refused in the handshake.
  listener.on("tlsClientError", (err: Error & { code?: string }, socket: tls.TLSSocket) => {
    logger.warn({ remote: `${socket.remoteAddress}:${socket.remotePort}`, reason: err.code ?? err.message }, "refused a connection: TLS handshake failed");
  });

  const port = await listen(listener, opts.port, opts.host);
  listener.on("error", (err) => logger.error({ err }, "TLS listener error"));
  return {
    port,
    callerOf: (peer) => callers.get(peer),
    close() {
      unsubscribe();
      listener.close();
    },
  };
}

/** The `caller` label of each name: itself for the first `max` distinct names, then "other". */
export function callerLabels(max = MAX_CALLER_LABELS): (name: string) => string {
  const labels = new Set<string>();
  return (name) => {
    if (labels.has(name)) return name;
    if (labels.size >= max) return "other";
    labels.add(name);
    return name;
  };
}

/** "CN=gateway\nO=Pet Store" (Node's form) as one line. */
function subjectOf(certificate: X509Certificate): string {
  return certificate.subject.split("\n").join(", ");
}

function commonNameOf(certificate: X509Certificate): string | undefined {
  return certificate.subject
    .split("\n")
    .find((part) => part.startsWith("CN="))
    ?.slice(3);
}
