import { service as healthService } from "grpc-health-check";
import { petstore_v1_PetService as CODECS } from "../../proto/generated/petstore-v1.ts";
import { PET_SERVICE_NAME } from "../../proto/load.ts";

/** Per-call metadata: lower-case ASCII names and values (a name ending in -bin carries base64). */
export type CallMetadata = Readonly<Record<string, string>>;

/** What a PetService client implementation provides: one attempt of one unary call. */

/** A unary method: its path and its message codecs. */
export interface UnaryMethod {
  /** "/package.Service/Method" */
  path: string;
  encode(request: unknown): Buffer;
  decode(reply: Buffer): unknown;
}

export type PetMethod = "ListPets" | "CreatePet" | "GetPet";

/** PetService's methods with the generated codecs. */
export const PET_METHODS: Readonly<Record<PetMethod, UnaryMethod>> = Object.fromEntries(
  (["ListPets", "CreatePet", "GetPet"] as const).map((name) => [
    name,
    { path: `/${PET_SERVICE_NAME}/${name}`, encode: CODECS[name]!.request.encode, decode: CODECS[name]!.response.decode },
  ]),
) as Record<PetMethod, UnaryMethod>;

/** grpc.health.v1.Health/Check, asked on the same connections as PetService (readiness, the serving gauge). */
const CHECK = healthService.Check!;
export const HEALTH_CHECK: UnaryMethod = {
  path: CHECK.path,
  encode: (request) => CHECK.requestSerialize(request as { service: string }),
  decode: (reply) => CHECK.responseDeserialize(reply),
};

export interface PetTransport {
  /** One attempt: resolves with the decoded reply, or rejects with a grpc.ServiceError. */
  unary(method: UnaryMethod, request: unknown, metadata: CallMetadata, deadline: number): Promise<unknown>;
  /** Closes every connection; calls in flight finish. */
  close(): void;
}

/** Certificates for TLS to the pet service. */
export interface PetServiceTls {
  /** PEM: the CA (or CAs) the pet service's certificate must chain to. */
  ca: Buffer;
  /** PEM: this client's certificate and key, for mutual TLS. */
  cert?: Buffer;
  key?: Buffer;
  /** The name the server's certificate must carry, when not the target's host. */
  servername?: string;
}

/** How connections to the pet service are kept, the same for every implementation (grpc-js's names in brackets). */
export interface ConnectionSettings {
  /** Reconnect backoff after a failure, first and longest pause (grpc.initial_/max_reconnect_backoff_ms). */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** A ping every keepaliveTimeMs while calls are in flight; none answered within keepaliveTimeoutMs drops the connection (grpc.keepalive_*). */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** A connection not up by then has failed (grpc-js: 20 s). */
  connectTimeoutMs: number;
  /** A DNS name is resolved again at most this often (grpc.dns_min_time_between_resolutions_ms). */
  minResolveIntervalMs: number;
}

/**
 * Short reconnect backoff so the gateway notices a restarted pet service within a second or two;
 * keepalive so a dead peer behind a load balancer is found while calls wait on it; grpc-js's
 * connect timeout and DNS rate limit.
 */
export const PET_SERVICE_CONNECTION: Readonly<ConnectionSettings> = Object.freeze({
  initialBackoffMs: 200,
  maxBackoffMs: 2_000,
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 5_000,
  connectTimeoutMs: 20_000,
  minResolveIntervalMs: 30_000,
});

/** gRPC's default limit on a received message (grpc-js's too). */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024;

export interface TransportOptions {
  /** A gRPC target (PET_SERVICE_ADDR): host:port, dns:///host:port, ipv4:h1:p1,h2:p2, … (grpc-target.ts). */
  address: string;
  connection: ConnectionSettings;
  /** TLS to the pet service: asked again for every new connection. Unset: plaintext. */
  tls?: () => PetServiceTls;
  maxReceiveMessageBytes?: number;
}
