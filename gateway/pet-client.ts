import * as grpc from "@grpc/grpc-js";
import type { Histogram } from "prom-client";
import { loadPetStorePackage, PET_SERVICE_NAME } from "../proto/load.js";
import type {
  CreatePetRequest,
  CreatePetResponse,
  GetPetRequest,
  GetPetResponse,
  ListPetsRequest,
  ListPetsResponse,
} from "../proto/types.js";
import { getOrCreate } from "../lib/get-or-create.js";

/** The gateway's view of PetService: promise-based, one deadline per call, request id passed on. */
export interface PetClient {
  listPets(request: ListPetsRequest, ctx: CallContext): Promise<ListPetsResponse>;
  createPet(request: CreatePetRequest, ctx: CallContext): Promise<CreatePetResponse>;
  getPet(request: GetPetRequest, ctx: CallContext): Promise<GetPetResponse>;
  close(): void;
}

export interface CallContext {
  requestId: string;
}

export interface PetClientOptions {
  /** A gRPC target (PET_SERVICE_ADDR): host:port, dns:///host:port, ipv4:h1:p1,h2:p2. */
  address: string;
  /** Deadline of every call, in milliseconds. */
  timeoutMs: number;
  /** Latency by RPC method and gRPC status code name. */
  latency?: Histogram<"method" | "code">;
}

/** Attempts of one PetService call at most (the first and two retries), all within its one deadline. */
export const PET_SERVICE_MAX_ATTEMPTS = 3;

/**
 * The channel's service config (grpc/doc/service_config.md):
 * - round_robin over every address the target resolves to (a headless Service's pods, an
 *   ipv4: list), each with its own HTTP/2 connection; addresses that fail leave the rotation
 *   until they reconnect;
 * - a call that fails with UNAVAILABLE (replica gone, shutting down, or its database down) is
 *   retried by grpc-js on the next replica of the rotation, after a short backoff, at most
 *   PET_SERVICE_MAX_ATTEMPTS in all, never past the call's deadline, and never once the replica
 *   has begun to answer. Creates too: every CreatePet carries a request_id (gateway/routes.ts), so
 *   a retry of a create that did commit returns that pet instead of adding another.
 * grpc-js's own retries rather than a loop here: on the hot path (no failure) both cost the same
 * client CPU within the noise of a micro-check (README, "Several replicas"), and grpc-js retries
 * at the picker, honours the deadline and server pushback without another promise per attempt.
 */
export const PET_SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
  methodConfig: [
    {
      name: [{ service: PET_SERVICE_NAME }],
      retryPolicy: {
        maxAttempts: PET_SERVICE_MAX_ATTEMPTS,
        initialBackoff: "0.02s",
        maxBackoff: "0.2s",
        backoffMultiplier: 2,
        retryableStatusCodes: ["UNAVAILABLE"],
      },
    },
  ],
};

/**
 * Short reconnect backoff so the gateway notices a restarted pet service within a second or two;
 * keepalive so a dead peer behind a load balancer is found without waiting for a request. The
 * service config above is ours alone: DNS TXT records do not replace it. The health checks of
 * /readyz use the same channel options (their service has no retry policy).
 */
export const PET_SERVICE_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 2000,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.enable_retries": 1,
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

/** One long-lived client (one channel: an HTTP/2 connection per replica) for the process, as grpc-node recommends. */
export function createPetClient(opts: PetClientOptions): PetClient {
  const { PetService } = loadPetStorePackage();
  const client = new PetService(opts.address, grpc.credentials.createInsecure(), PET_SERVICE_CHANNEL_OPTIONS);

  function call<Req, Res>(method: string) {
    const fn = (client[method] as Unary<Req, Res>).bind(client);
    // Histogram children made once per status code, not looked up by label object per call.
    const byCode = new Map<number, { observe(seconds: number): void }>();
    const observe = (code: number, seconds: number) =>
      getOrCreate(byCode, code, () => opts.latency!.labels({ method, code: grpc.status[code] ?? String(code) })).observe(seconds);
    return (request: Req, ctx: CallContext): Promise<Res> =>
      new Promise((resolve, reject) => {
        const metadata = new grpc.Metadata();
        metadata.set("x-request-id", ctx.requestId);
        const started = opts.latency ? performance.now() : 0;
        fn(request, metadata, { deadline: Date.now() + opts.timeoutMs }, (err, response) => {
          if (opts.latency) observe(err ? err.code : grpc.status.OK, (performance.now() - started) / 1000);
          if (err) reject(err);
          else resolve(response);
        });
      });
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
