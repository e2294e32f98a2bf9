import * as grpc from "@grpc/grpc-js";
import { trace } from "@opentelemetry/api";
import type { Counter, Histogram } from "prom-client";
import { withGeneratedCodecs } from "../../proto/generated-codecs.ts";
import { loadPetServiceDefinition, loadPetStorePackage } from "../../proto/load.ts";
import type {
  CreatePetRequest,
  CreatePetResponse,
  GetPetRequest,
  GetPetResponse,
  ListPetsRequest,
  ListPetsResponse,
} from "../../proto/types.ts";
import { getOrCreate } from "../../lib/get-or-create.ts";
import { latencySeries, type LatencySeries } from "../../lib/openmetrics.ts";
import type { TlsSource } from "../../lib/tls-files.ts";
import { petServiceCredentials } from "./credentials.ts";

/** The gateway's view of PetService: promise-based, one deadline per call, request id passed on. */
export interface PetClient {
  listPets(request: ListPetsRequest, ctx: CallContext): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, ctx: CallContext): Promise<CreatePetResponse>;
  getPet(request: GetPetRequest, ctx: CallContext): Promise<GetPetResponse>;
  close(): void;
}

export interface CallContext {
  requestId: string;
  /**
   * More ASCII metadata for every attempt of the call: the trace context (`traceparent`,
   * `tracestate`) of the call's span (gateway/pet-client/traced.ts).
   */
  metadata?: Readonly<Record<string, string>>;
}

export interface PetClientOptions {
  /** A gRPC target (PET_SERVICE_ADDR): host:port, dns:///host:port, ipv4:h1:p1,h2:p2. */
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
}

/** Attempts of one PetService call at most (the first and two retries), all within its one deadline. */
export const PET_SERVICE_MAX_ATTEMPTS = 3;
/** Pause before retry n: a random share of RETRY_BACKOFF_MS × 2^(n-1) (full jitter), so the balancer has moved on. */
const RETRY_BACKOFF_MS = 25;

/**
 * round_robin over every address the target resolves to (a headless Service's pods, an ipv4:
 * list), each with its own HTTP/2 connection; addresses that fail leave the rotation until they
 * reconnect. The service config is ours alone: DNS TXT records do not replace it. Retries: see
 * createPetClient.
 */
export const PET_SERVICE_CONFIG = { loadBalancingConfig: [{ round_robin: {} }] };

/**
 * Short reconnect backoff so the gateway notices a restarted pet service within a second or two;
 * keepalive so a dead peer behind a load balancer is found without waiting for a request.
 * grpc.enable_retries stays on for grpc-js's transparent retries only (a call that never left the
 * gateway); the retries of calls that reached a replica are the client's own (below). The health
 * checks of /readyz use the same channel options.
 */
export const PET_SERVICE_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 2000,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.service_config": JSON.stringify(PET_SERVICE_CONFIG),
  "grpc.service_config_disable_resolution": 1,
  // No channelz bookkeeping (per-call counters and timestamps) on the hot path; nothing here reads it.
  "grpc.enable_channelz": 0,
};

type Unary<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/**
 * One long-lived client (one channel: an HTTP/2 connection per replica) for the process, as
 * grpc-node recommends.
 *
 * A call that fails with UNAVAILABLE (its replica died, is shutting down, or cannot reach its
 * database) is tried again on the next replica of the rotation, after a short jittered pause, at
 * most PET_SERVICE_MAX_ATTEMPTS times in all and never past the call's one deadline. Every
 * PetService call is safe to repeat: reads change nothing, and every CreatePet carries a
 * request_id (gateway/http/routes.ts), so a retry of a create that did commit answers that pet
 * instead of adding another. This loop rather than grpc-js's retryPolicy: grpc-js stops retrying
 * once a replica has begun to answer (gRPC's rule for calls it cannot know to be idempotent), and
 * a replica killed between its response headers and its status then surfaced as a 503; on the
 * success path both cost the same CPU within the noise of a micro-check (README, "Several replicas").
 */
export function createPetClient(opts: PetClientOptions): PetClient {
  const { PetService } = loadPetStorePackage(withGeneratedCodecs(loadPetServiceDefinition()));
  const client = new PetService(opts.address, petServiceCredentials(opts.tls), PET_SERVICE_CHANNEL_OPTIONS);

  function call<Req, Res>(method: string) {
    const fn = (client[method] as Unary<Req, Res>).bind(client);
    // Histogram children made once per status code, not looked up by label object per call.
    const byCode = new Map<number, LatencySeries>();
    const observe = (code: number, seconds: number) =>
      getOrCreate(byCode, code, () => latencySeries(opts.latency!, { method, code: grpc.status[code] ?? String(code) })).observe(seconds, trace.getActiveSpan());
    const retried = opts.retries?.labels(method);
    const attempt = (request: Req, ctx: CallContext, deadline: number): Promise<Res> =>
      new Promise((resolve, reject) => {
        const metadata = new grpc.Metadata();
        metadata.set("x-request-id", ctx.requestId);
        if (ctx.metadata) for (const name in ctx.metadata) metadata.set(name, ctx.metadata[name]!);
        fn(request, metadata, { deadline }, (err, response) => (err ? reject(err) : resolve(response)));
      });
    return async (request: Req, ctx: CallContext): Promise<Res> => {
      const started = opts.latency ? performance.now() : 0;
      const deadline = Date.now() + opts.timeoutMs;
      for (let n = 1; ; n++) {
        try {
          const response = await attempt(request, ctx, deadline);
          if (opts.latency) observe(grpc.status.OK, (performance.now() - started) / 1000);
          return response;
        } catch (err) {
          const pause = Math.random() * RETRY_BACKOFF_MS * 2 ** (n - 1);
          const again = (err as grpc.ServiceError).code === grpc.status.UNAVAILABLE && n < PET_SERVICE_MAX_ATTEMPTS && Date.now() + pause < deadline;
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
    listPets: call<ListPetsRequest, ListPetsResponse>("ListPets"),
    createPet: call<CreatePetRequest, CreatePetResponse>("CreatePet"),
    getPet: call<GetPetRequest, GetPetResponse>("GetPet"),
    close: () => client.close(),
  };
}

export function isGrpcError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as grpc.ServiceError).code === "number" && "metadata" in err;
}
