import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../lib/logger.js";
import type {
  CreatePetRequest,
  CreatePetResponse,
  GetPetRequest,
  GetPetResponse,
  ListPetsRequest,
  ListPetsResponse,
} from "../proto/types.js";
import { internal, invalidArgument, notFound, RpcError } from "./grpc-errors.js";
import { toProtoPet } from "./proto-mapping.js";
import { checkListQuery, checkNewPet, checkPetId, type Checked } from "./rules.js";
import type { PetStore } from "./store/pet-store.js";

export interface HandlerDeps {
  store: PetStore;
  logger: Logger;
}

/** Request ids are echoed into logs; bound them so a caller cannot flood a log line. */
const REQUEST_ID_MAX_LENGTH = 128;

/** The PetService implementation, keyed by the proto's method names. */
export function petServiceHandlers({ store, logger }: HandlerDeps): grpc.UntypedServiceImplementation {
  const unary = <Req, Res>(method: string, handle: (request: Req) => Promise<Res>) =>
    unaryHandler(logger.child({ rpc: method }), handle);

  return {
    CreatePet: unary<CreatePetRequest, CreatePetResponse>("CreatePet", async (request) => ({
      pet: toProtoPet(await store.create(accepted(checkNewPet(request)))),
    })),
    ListPets: unary<ListPetsRequest, ListPetsResponse>("ListPets", async (request) => ({
      pets: (await store.list(accepted(checkListQuery(request)))).map(toProtoPet),
    })),
    GetPet: unary<GetPetRequest, GetPetResponse>("GetPet", async (request) => {
      const id = accepted(checkPetId(request));
      const pet = await store.get(id);
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
 * Runs one call with a child logger carrying the caller's x-request-id, logs its outcome once,
 * and turns anything but an RpcError into a generic INTERNAL (the detail goes to the log only).
 */
function unaryHandler<Req, Res>(
  logger: Logger,
  handle: (request: Req) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    const started = performance.now();
    const log = logger.child({ requestId: requestIdOf(call.metadata) });
    const elapsedMs = () => Math.round((performance.now() - started) * 10) / 10;
    handle(call.request).then(
      (response) => {
        log.info({ code: "OK", ms: elapsedMs() }, "rpc");
        callback(null, response);
      },
      (err: unknown) => {
        if (err instanceof RpcError) {
          log.info({ code: grpc.status[err.code], details: err.details, ms: elapsedMs() }, "rpc");
          callback(err);
        } else {
          log.error({ code: "INTERNAL", err, ms: elapsedMs() }, "rpc failed");
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
