import { rootCertificates } from "node:tls";
import type * as grpc from "@grpc/grpc-js";
import { trace } from "@opentelemetry/api";
import type { Counter, Histogram } from "prom-client";
import { status as grpcStatus } from "@grpc/grpc-js";
import type {
  CreatePetRequestInit,
  CreatePetResponse,
  GetPetRequestInit,
  GetPetResponse,
  ListPetsRequestInit,
  ListPetsResponse,
} from "../../proto/generated/petstore-v1.ts";
import { getOrCreate } from "../../lib/get-or-create.ts";
import { createGrpcJsTransport } from "./grpc-js-transport.ts";
import { createHttp2Transport } from "./http2-transport.ts";
import { HEALTH_CHECK, PET_METHODS, PET_SERVICE_CONNECTION, type CallMetadata, type ConnectionSettings, type PetMethod, type PetServiceTls, type PetTransport } from "./transport.ts";
import { latencySeries, type LatencySeries } from "../../lib/openmetrics.ts";
import type { TlsSource } from "../../lib/tls-files.ts";

export { isGrpcError } from "./service-error.ts";

/** The gateway's view of PetService: promise-based, one deadline per call, request id and metadata passed on. */
export interface PetClient {
  listPets(request: ListPetsRequestInit, ctx: CallContext): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequestInit, ctx: CallContext): Promise<CreatePetResponse>;
  getPet(request: GetPetRequestInit, ctx: CallContext): Promise<GetPetResponse>;
  /**
   * grpc.health.v1 Check of `service` on the same connections (one attempt, its own deadline, not
   * in the call metrics): "SERVING", "NOT_SERVING", …; rejects with the gRPC error.
   */
  checkHealth(service: string, timeoutMs: number): Promise<string>;
  close(): void;
}

export interface CallContext {
  /** Sent as x-request-id. */
  requestId: string;
  /**
   * More gRPC metadata for every attempt of the call: the trace context (`traceparent`,
   * `tracestate`) of the call's span (gateway/pet-client/traced.ts); lower-case names, ASCII values.
   */
  metadata?: CallMetadata;
}

/** The implementations of the PetService client (docs/scaling.md, "The gateway's gRPC client"). */
export const PET_CLIENT_IMPLEMENTATIONS = ["http2", "grpc-js"] as const;
export type PetClientImplementation = (typeof PET_CLIENT_IMPLEMENTATIONS)[number];

export interface PetClientOptions {
  /** A gRPC target (PET_SERVICE_ADDR): host:port, dns:///host:port, ipv4:h1:p1,h2:p2, … (grpc-target.ts). */
  address: string;
  /** Deadline of every call, in milliseconds. */
  timeoutMs: number;
  /**
   * TLS to the pet service (PET_SERVICE_TLS_*); plaintext (h2c) when absent. Every new connection
   * must use `tls.current()`: the files rotate while the gateway runs.
   */
  tls?: TlsSource;
  /**
   * Latency by RPC method and gRPC status code name (retries included), observed in the caller's
   * async context so a sampled call's trace becomes the exemplar (lib/openmetrics.ts).
   */
  latency?: Histogram<"method" | "code">;
  /** Calls tried again on another replica, by RPC method. */
  retries?: Counter<"method">;
  /** PET_SERVICE_CONNECTION unless given (tests shorten the timers). */
  connection?: ConnectionSettings;
  /** Replies larger than this fail with RESOURCE_EXHAUSTED (gRPC's default: 4 MiB). */
  maxReceiveMessageBytes?: number;
  /** "http2" (the default: node:http2 directly) or "grpc-js". */
  implementation?: PetClientImplementation;
}

/** Attempts of one PetService call at most (the first and two retries), all within its one deadline. */
export const PET_SERVICE_MAX_ATTEMPTS = 3;
/** Pause before retry n: a random share of RETRY_BACKOFF_MS × 2^(n-1) (full jitter), so the balancer has moved on. */
const RETRY_BACKOFF_MS = 25;

/**
 * One long-lived client for the process: a connection per replica, calls balanced round robin
 * (transport.ts; both implementations behave alike, tests/integration/gateway/pet-client/).
 *
 * A call that fails with UNAVAILABLE (its replica died, is shutting down, or cannot reach its
 * database) is tried again on the next replica of the rotation, after a short jittered pause, at
 * most PET_SERVICE_MAX_ATTEMPTS times in all and never past the call's one deadline. Every
 * PetService call is safe to repeat: reads change nothing, and every CreatePet carries a
 * request_id (gateway/http/routes.ts), so a retry of a create that did commit answers that pet
 * instead of adding another. This loop rather than grpc-js's retryPolicy: grpc-js stops retrying
 * once a replica has begun to answer (gRPC's rule for calls it cannot know to be idempotent), and
 * a replica killed between its response headers and its status then surfaced as a 503; on the
 * success path both cost the same CPU within the noise of a micro-check (docs/scaling.md, "Why the gateway's own retry loop").
 */
export function createPetClient(opts: PetClientOptions): PetClient {
  const transportOptions = {
    address: opts.address,
    connection: opts.connection ?? PET_SERVICE_CONNECTION,
    ...(opts.tls && { tls: transportTls(opts.tls) }),
    ...(opts.maxReceiveMessageBytes !== undefined && { maxReceiveMessageBytes: opts.maxReceiveMessageBytes }),
  };
  const transport: PetTransport = (opts.implementation ?? "http2") === "grpc-js" ? createGrpcJsTransport(transportOptions) : createHttp2Transport(transportOptions);

  function call<Req extends object, Res>(name: PetMethod) {
    const method = PET_METHODS[name];
    // Histogram children made once per status code, not looked up by label object per call.
    const byCode = new Map<number, LatencySeries>();
    const observe = (code: number, seconds: number) =>
      getOrCreate(byCode, code, () => latencySeries(opts.latency!, { method: name, code: grpcStatus[code] ?? String(code) })).observe(seconds, trace.getActiveSpan());
    const retried = opts.retries?.labels(name);
    return async (request: Req, ctx: CallContext): Promise<Res> => {
      const started = opts.latency ? performance.now() : 0;
      const deadline = Date.now() + opts.timeoutMs;
      const metadata = ctx.metadata ? { ...ctx.metadata, "x-request-id": ctx.requestId } : { "x-request-id": ctx.requestId };
      for (let n = 1; ; n++) {
        try {
          const response = (await transport.unary(method, request, metadata, deadline)) as Res;
          if (opts.latency) observe(grpcStatus.OK, (performance.now() - started) / 1000);
          return response;
        } catch (err) {
          const pause = Math.random() * RETRY_BACKOFF_MS * 2 ** (n - 1);
          const again = (err as grpc.ServiceError).code === grpcStatus.UNAVAILABLE && n < PET_SERVICE_MAX_ATTEMPTS && Date.now() + pause < deadline;
          if (!again) {
            if (opts.latency) observe((err as grpc.ServiceError).code, (performance.now() - started) / 1000);
            throw err;
          }
          retried?.inc();
          await new Promise((r) => setTimeout(r, pause));
        }
      }
    };
  }

  return {
    listPets: call<ListPetsRequestInit, ListPetsResponse>("ListPets"),
    createPet: call<CreatePetRequestInit, CreatePetResponse>("CreatePet"),
    getPet: call<GetPetRequestInit, GetPetResponse>("GetPet"),
    checkHealth: async (service, timeoutMs) => ((await transport.unary(HEALTH_CHECK, { service }, {}, Date.now() + timeoutMs)) as { status: string }).status,
    close: () => transport.close(),
  };
}

/** Node's public roots, when PET_SERVICE_TLS_CA is unset (a pet service with a publicly issued certificate). */
const PUBLIC_ROOTS = Buffer.from(rootCertificates.join("\n"));

/** The files' current material for each new connection, so rotated certificates are used without a restart. */
function transportTls(source: TlsSource): () => PetServiceTls {
  return () => {
    const { ca = PUBLIC_ROOTS, cert, key } = source.current();
    return { ca, ...(cert && { cert }), ...(key && { key }) };
  };
}
