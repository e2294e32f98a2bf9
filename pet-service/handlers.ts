import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../lib/logger.ts";
import type {
  CreatePetRequest,
  CreatePetResponse,
  GetPetRequest,
  GetPetResponse,
  ListPetsRequest,
  ListPetsResponse,
} from "../proto/generated/petstore-v1.ts";
import { internal, invalidArgument, notFound, RpcError, storageUnavailable } from "./grpc-errors.ts";
import { createPet } from "./idempotency.ts";
import type { PetServiceMetrics } from "./metrics.ts";
import { createPageTokens } from "./page-token.ts";
import { listPage } from "./paging.ts";
import { toProtoPet } from "./proto-mapping.ts";
import { checkCreatePet, checkListQuery, checkPetId, namesNoPet, type Checked } from "./rules.ts";
import { StorageUnavailableError, type PetStore } from "./store/pet-store.ts";
import { getOrCreate } from "../lib/get-or-create.ts";
import type { Clock } from "../lib/clock.ts";
import { systemClock } from "../lib/clock.ts";

export interface HandlerDeps {
  store: PetStore;
  logger: Logger;
  /** Counted and timed per call (storage faults by fault) when given. */
  metrics?: Pick<PetServiceMetrics, "grpcHandled" | "grpcDuration" | "storageFaults">;
  /** Ages CreatePet's idempotency keys; the system clock unless a test moves time. */
  clock?: Clock;
}

/** Request ids are echoed into logs; bound them so a caller cannot flood a log line. */
const REQUEST_ID_MAX_LENGTH = 128;

/** The PetService implementation, keyed by the proto's method names. */
export function petServiceHandlers({ store, logger, metrics, clock = systemClock }: HandlerDeps): grpc.UntypedServiceImplementation {
  const pageTokens = createPageTokens(store.pageTokenSecret);
  const faultCounters = new Map<string, { inc(): void }>();
  const storageFault = metrics && ((fault: string) => getOrCreate(faultCounters, fault, () => metrics.storageFaults.labels(fault)).inc());
  const unary = <Req, Res>(method: string, handle: (request: Req) => Promise<Res>) =>
    unaryHandler(logger.child({ rpc: method }), metrics && outcomeRecorder(metrics, method), storageFault, handle);

  return {
    CreatePet: unary<CreatePetRequest, CreatePetResponse>("CreatePet", async (request) =>
      createPet(store, clock, accepted(checkCreatePet(request))),
    ),
    ListPets: unary<ListPetsRequest, ListPetsResponse>("ListPets", async (request) =>
      listPage(store, pageTokens, accepted(checkListQuery(request, pageTokens))),
    ),
    GetPet: unary<GetPetRequest, GetPetResponse>("GetPet", async (request) => {
      const id = accepted(checkPetId(request));
      const pet = namesNoPet(id) ? undefined : await store.get(id);
      if (!pet) throw notFound(`pet ${id} not found`);
      return { pet: toProtoPet(pet) };
    }),
  };
}

function accepted<T>(checked: Checked<T>): T {
  if (!checked.ok) throw invalidArgument(checked.violations);
  return checked.value;
}

/** Records one call's outcome in the metrics; label children are made once per code, not per call. */
type RecordOutcome = (code: string, seconds: number) => void;

function outcomeRecorder(metrics: NonNullable<HandlerDeps["metrics"]>, method: string): RecordOutcome {
  const byCode = new Map<string, { handled: { inc(): void }; duration: { observe(value: number): void } }>();
  return (code, seconds) => {
    const series = getOrCreate(byCode, code, () => ({
      handled: metrics.grpcHandled.labels(method, code),
      duration: metrics.grpcDuration.labels(method, code),
    }));
    series.handled.inc();
    series.duration.observe(seconds);
  };
}

/**
 * Every PetService call passes through here: runs it, logs its outcome once with the caller's
 * x-request-id (rpc, requestId, code, ms), counts and times it by method and code, answers a
 * storage fault with UNAVAILABLE (counted by fault), and turns anything else but an RpcError into
 * a generic INTERNAL (the detail goes to the log only).
 */
function unaryHandler<Req, Res>(
  logger: Logger,
  record: RecordOutcome | undefined,
  countStorageFault: ((fault: string) => void) | undefined,
  handle: (request: Req) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const started = performance.now();
    // The request id goes into each line's fields rather than a child logger: same JSON line,
    // without building a logger per call.
    const requestId = requestIdOf(call.metadata);
    const finish = (code: string) => {
      const elapsed = performance.now() - started;
      record?.(code, elapsed / 1000);
      return Math.round(elapsed * 10) / 10;
    };
    handle(call.request).then(
      (response) => {
        logger.info({ requestId, code: "OK", ms: finish("OK") }, "rpc");
        callback(null, response);
      },
      (err: unknown) => {
        if (err instanceof RpcError) {
          const code = grpc.status[err.code];
          logger.info({ requestId, code, details: err.details, ms: finish(code) }, "rpc");
          callback(err);
        } else if (err instanceof StorageUnavailableError) {
          countStorageFault?.(err.fault);
          logger.warn({ requestId, code: "UNAVAILABLE", fault: err.fault, err: err.cause, ms: finish("UNAVAILABLE") }, "rpc refused: storage unavailable");
          callback(storageUnavailable(err.fault));
        } else {
          logger.error({ requestId, code: "INTERNAL", err, ms: finish("INTERNAL") }, "rpc failed");
          callback(internal());
        }
      },
    );
  };
}

function requestIdOf(metadata: grpc.Metadata): string | undefined {
  const [value] = metadata.get("x-request-id");
  return typeof value === "string" ? value.slice(0, REQUEST_ID_MAX_LENGTH) : undefined;
}
