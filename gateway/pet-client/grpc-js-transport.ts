import * as grpc from "@grpc/grpc-js";
import { type ConnectionSettings, type PetServiceTls, type PetTransport, type TransportOptions } from "./transport.ts";

/**
 * round_robin over every address the target resolves to (a headless Service's pods, an ipv4:
 * list), each with its own HTTP/2 connection; addresses that fail leave the rotation until they
 * reconnect. The service config is ours alone: DNS TXT records do not replace it.
 */
const SERVICE_CONFIG = { loadBalancingConfig: [{ round_robin: {} }] };

/**
 * grpc-js's channel options for the connection settings (PET_SERVICE_CONNECTION by default).
 * grpc.enable_retries stays on for grpc-js's transparent retries only (a call that never left the
 * gateway); the retries of calls that reached a replica are the client's own (pet-client.ts). The
 * health checks of /readyz use the same options.
 */
export function grpcJsChannelOptions(settings: ConnectionSettings, maxReceiveMessageBytes?: number): grpc.ChannelOptions {
  return {
    "grpc.initial_reconnect_backoff_ms": settings.initialBackoffMs,
    "grpc.max_reconnect_backoff_ms": settings.maxBackoffMs,
    "grpc.keepalive_time_ms": settings.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": settings.keepaliveTimeoutMs,
    "grpc.dns_min_time_between_resolutions_ms": settings.minResolveIntervalMs,
    "grpc.service_config": JSON.stringify(SERVICE_CONFIG),
    "grpc.service_config_disable_resolution": 1,
    // No channelz bookkeeping (per-call counters and timestamps) on the hot path; nothing here reads it.
    "grpc.enable_channelz": 0,
    ...(maxReceiveMessageBytes !== undefined && { "grpc.max_receive_message_length": maxReceiveMessageBytes }),
  };
}

/**
 * grpc-js's certificate provider over a function: asks it again every `refreshMs` and tells
 * grpc-js when the material changed, so new connections use rotated certificates.
 */
class PolledCertificates implements grpc.experimental.CertificateProvider {
  private ca = new Set<grpc.experimental.CaCertificateUpdateListener>();
  private identity = new Set<grpc.experimental.IdentityCertificateUpdateListener>();
  private latest: PetServiceTls | undefined;
  private timer: NodeJS.Timeout;
  private readonly material: () => PetServiceTls;

  constructor(material: () => PetServiceTls, refreshMs: number) {
    this.material = material;
    this.latest = material();
    this.timer = setInterval(() => this.refresh(), refreshMs);
    this.timer.unref();
  }
  private refresh(): void {
    const next = this.material();
    const prev = this.latest;
    this.latest = next;
    if (prev && next.ca.equals(prev.ca) && same(next.cert, prev.cert) && same(next.key, prev.key)) return;
    for (const l of this.ca) l({ caCertificate: next.ca });
    for (const l of this.identity) l(next.cert && next.key ? { certificate: next.cert, privateKey: next.key } : null);
  }
  addCaCertificateListener(l: grpc.experimental.CaCertificateUpdateListener): void {
    this.ca.add(l);
    l({ caCertificate: this.latest!.ca });
  }
  removeCaCertificateListener(l: grpc.experimental.CaCertificateUpdateListener): void {
    this.ca.delete(l);
  }
  addIdentityCertificateListener(l: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identity.add(l);
    const { cert, key } = this.latest!;
    l(cert && key ? { certificate: cert, privateKey: key } : null);
  }
  removeIdentityCertificateListener(l: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identity.delete(l);
  }
  close(): void {
    clearInterval(this.timer);
  }
}

const same = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

/** How often the grpc-js client asks the TLS function for rotated certificates. */
const TLS_REFRESH_MS = 1_000;

/**
 * A PetService call through grpc-js: `makeUnaryRequest` with the generated codecs. The gateway's
 * client before the node:http2 one (transport.ts), kept as the reference the conformance suite
 * runs against and as a bench candidate (with `moreChannelOptions` tried there); internal callers
 * use grpc-js too.
 */
export function createGrpcJsTransport(opts: TransportOptions, moreChannelOptions: grpc.ChannelOptions = {}): PetTransport {
  const certificates = opts.tls && new PolledCertificates(opts.tls, TLS_REFRESH_MS);
  const credentials = certificates
    ? grpc.experimental.createCertificateProviderChannelCredentials(certificates, opts.tls!().cert ? certificates : null)
    : grpc.credentials.createInsecure();
  const client = new grpc.Client(opts.address, credentials, {
    ...grpcJsChannelOptions(opts.connection, opts.maxReceiveMessageBytes),
    ...moreChannelOptions,
  });
  return {
    unary(method, request, metadata, deadline) {
      const md = new grpc.Metadata();
      for (const name in metadata) md.set(name, metadata[name]!);
      return new Promise((resolve, reject) => {
        client.makeUnaryRequest(method.path, method.encode, method.decode, request, md, { deadline }, (err, reply) => (err ? reject(err) : resolve(reply)));
      });
    },
    close() {
      client.close();
      certificates?.close();
    },
  };
}
