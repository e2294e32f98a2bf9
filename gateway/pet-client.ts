import * as grpc from "@grpc/grpc-js";
import type { Histogram } from "prom-client";
import { loadPetServiceDefinition, loadPetStorePackage, withGeneratedCodecs } from "../proto/load.js";
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
  address: string;
  /** Deadline of every call, in milliseconds. */
  timeoutMs: number;
  /** Latency by RPC method and gRPC status code name. */
  latency?: Histogram<"method" | "code">;
}

/**
 * Short reconnect backoff so the gateway notices a restarted pet service within a second or two;
 * keepalive so a dead peer behind a load balancer is found without waiting for a request.
 */
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 200,
  "grpc.max_reconnect_backoff_ms": 2000,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.enable_retries": 0,
  // No channelz bookkeeping (per-call counters and timestamps) on the hot path; nothing here reads it.
  "grpc.enable_channelz": 0,
};

type Unary<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** One long-lived client (one HTTP/2 channel) for the process, as grpc-node recommends. */
export function createPetClient(opts: PetClientOptions): PetClient {
  const { PetService } = loadPetStorePackage(withGeneratedCodecs(loadPetServiceDefinition()));
  const client = new PetService(opts.address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);

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
