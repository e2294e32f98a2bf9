import * as grpc from "@grpc/grpc-js";
import { context, propagation, ROOT_CONTEXT, SpanStatusCode, type Span, type TextMapGetter } from "@opentelemetry/api";
import type { Logger } from "../lib/logger.ts";
import { latencySeries, type LatencySeries } from "../lib/openmetrics.ts";
import { requestContext, startServerSpan } from "../lib/tracing/spans.ts";
import { PET_SERVICE_NAME } from "../proto/load.ts";
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
import { StorageUnavailableError } from "../lib/storage-faults.ts";
import type { PetStore } from "./store/pet-store.ts";
import { getOrCreate } from "../lib/get-or-create.ts";
import type { Clock } from "../lib/clock.ts";
import { systemClock } from "../lib/clock.ts";
import { ANONYMOUS_CALLER, type Caller } from "./tls-listener.ts";

export interface HandlerDeps {
  store: PetStore;
  logger: Logger;
  /** Counted and timed per call (storage faults by fault) when given. */
  metrics?: Pick<PetServiceMetrics, "grpcHandled" | "grpcDuration" | "storageFaults">;
  /** Ages CreatePet's idempotency keys; the system clock unless a test moves time. */
  clock?: Clock;
  /** Who called, by the call's peer: the verified client certificate of its connection (mTLS), else undefined. */
  callerOf?: (peer: string) => Caller | undefined;
}

/** Request ids are echoed into logs; bound them so a caller cannot flood a log line. */
const REQUEST_ID_MAX_LENGTH = 128;

/** The PetService implementation, keyed by the proto's method names. */
export function petServiceHandlers({ store, logger, metrics, clock = systemClock, callerOf }: HandlerDeps): grpc.UntypedServiceImplementation {
  const pageTokens = createPageTokens(store.pageTokenSecret);
  const faultCounters = new Map<string, { inc(): void }>();
  const storageFault = metrics && ((fault: string) => getOrCreate(faultCounters, fault, () => metrics.storageFaults.labels(fault)).inc());
  const unary = <Req, Res>(method: string, handle: (request: Req) => Promise<Res>) =>
    unaryHandler(
      { method, logger: logger.child({ rpc: method }), record: metrics && outcomeRecorder(metrics, method), countStorageFault: storageFault, callerOf },
      handle,
    );

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

/**
 * Records one call's outcome in the metrics, by code and caller (the bounded label of its client
 * certificate); label children are made once per pair, not per call. A sampled call's trace is
 * its latency's exemplar.
 */
type RecordOutcome = (code: string, caller: string, seconds: number, span: Span) => void;

function outcomeRecorder(metrics: NonNullable<HandlerDeps["metrics"]>, method: string): RecordOutcome {
  const bySeries = new Map<string, { handled: { inc(): void }; duration: LatencySeries }>();
  return (code, caller, seconds, span) => {
    const series = getOrCreate(bySeries, `${code} ${caller}`, () => ({
      handled: metrics.grpcHandled.labels(method, code, caller),
      duration: latencySeries(metrics.grpcDuration, { method, code, caller }),
    }));
    series.handled.inc();
    series.duration.observe(seconds, span);
  };
}

/** The W3C trace context the caller sent in the call's metadata (`traceparent`, `tracestate`). */
const METADATA: TextMapGetter<grpc.Metadata> = {
  keys: (metadata) => Object.keys(metadata.getMap()),
  get: (metadata, key) => {
    const [value] = metadata.get(key);
    return typeof value === "string" ? value : undefined;
  },
};

interface UnaryOptions {
  method: string;
  logger: Logger;
  record: RecordOutcome | undefined;
  countStorageFault: ((fault: string) => void) | undefined;
  callerOf: HandlerDeps["callerOf"];
}

/**
 * Every PetService call passes through here: continues the caller's trace (a SERVER span, the
 * trace context from the call's metadata; a new trace without one), runs it with that span
 * active (the store's spans, every log line's ids), logs its outcome once with the caller's
 * x-request-id and, over mTLS, its certificate's subject (rpc, requestId, caller, code, ms),
 * counts and times it by method, code and caller, answers a storage fault with UNAVAILABLE
 * (counted by fault), and turns anything else but an RpcError into a generic INTERNAL (the detail
 * goes to the log only).
 */
function unaryHandler<Req, Res>(
  { method, logger, record, countStorageFault, callerOf }: UnaryOptions,
  handle: (request: Req) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  const name = `${PET_SERVICE_NAME}/${method}`;
  return (call, callback) => {
    const started = performance.now();
    // The request id goes into each line's fields rather than a child logger: same JSON line,
    // without building a logger per call.
    const requestId = requestIdOf(call.metadata);
    const caller = callerOf?.(call.getPeer());
    const fields = caller ? { requestId, caller: caller.subject } : { requestId };
    const parent = propagation.extract(ROOT_CONTEXT, call.metadata, METADATA);
    const span = startServerSpan(name, parent);
    const recording = span.isRecording();
    if (recording) {
      span.setAttributes({ "rpc.system": "grpc", "rpc.service": PET_SERVICE_NAME, "rpc.method": method });
      if (requestId !== undefined) span.setAttribute("pet_store.request_id", requestId);
      if (caller) span.setAttribute("pet_store.caller", caller.subject);
    }
    const finish = (code: grpc.status) => {
      const elapsed = performance.now() - started;
      const codeName = grpc.status[code];
      record?.(codeName, caller?.label ?? ANONYMOUS_CALLER, elapsed / 1000, span);
      if (recording) {
        span.setAttribute("rpc.grpc.status_code", code);
        if (code === grpc.status.INTERNAL || code === grpc.status.UNAVAILABLE) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName });
        span.end();
      }
      return Math.round(elapsed * 10) / 10;
    };
    context.with(requestContext(span, requestId), () =>
      handle(call.request).then(
        (response) => {
          logger.info({ ...fields, code: "OK", ms: finish(grpc.status.OK) }, "rpc");
          callback(null, response);
        },
        (err: unknown) => {
          if (err instanceof RpcError) {
            logger.info({ ...fields, code: grpc.status[err.code], details: err.details, ms: finish(err.code) }, "rpc");
            callback(err);
          } else if (err instanceof StorageUnavailableError) {
            countStorageFault?.(err.fault);
            logger.warn({ ...fields, code: "UNAVAILABLE", fault: err.fault, err: err.cause, ms: finish(grpc.status.UNAVAILABLE) }, "rpc refused: storage unavailable");
            callback(storageUnavailable(err.fault));
          } else {
            logger.error({ ...fields, code: "INTERNAL", err, ms: finish(grpc.status.INTERNAL) }, "rpc failed");
            callback(internal());
          }
        },
      ),
    );
  };
}

function requestIdOf(metadata: grpc.Metadata): string | undefined {
  const [value] = metadata.get("x-request-id");
  return typeof value === "string" ? value.slice(0, REQUEST_ID_MAX_LENGTH) : undefined;
}
