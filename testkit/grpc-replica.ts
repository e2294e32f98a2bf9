import * as grpc from "@grpc/grpc-js";
import { withGeneratedCodecs } from "../proto/generated-codecs.ts";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../proto/load.ts";

/**
 * A PetService replica for client tests: a real grpc-js server on a loopback address of the
 * test's choice (127.0.0.1, 127.0.0.2, … all reach this machine), whose answers the test scripts
 * per method. By default ListPets answers one pet named after the replica (so a test sees who
 * served a call), CreatePet echoes the pet, GetPet is NOT_FOUND. Every call is recorded.
 */
export type PetMethodName = "ListPets" | "CreatePet" | "GetPet";

export interface ReplicaCall {
  method: PetMethodName;
  request: Record<string, unknown>;
  metadata: grpc.Metadata;
  /** The deadline the client sent (grpc-timeout), as the server sees it. */
  deadline: grpc.Deadline;
  /** TLS: the client certificate it presented (taken while the call runs). */
  auth: ReturnType<grpc.ServerUnaryCall<unknown, unknown>["getAuthContext"]>;
  call: grpc.ServerUnaryCall<unknown, unknown>;
}

/** What a scripted method does: resolve with the reply, or reject with a grpc.StatusObject-like error. */
export type ReplicaHandler = (call: ReplicaCall) => Promise<object>;

export interface TestReplica {
  name: string;
  /** "host:port" */
  address: string;
  port: number;
  calls: ReplicaCall[];
  handle(method: PetMethodName, handler: ReplicaHandler): void;
  /** Graceful: GOAWAY, calls in flight finish. */
  shutdown(): Promise<void>;
  /** Connections reset at once. */
  kill(): void;
}

export interface ReplicaOptions {
  name: string;
  host?: string;
  port?: number;
  serverOptions?: grpc.ServerOptions;
  credentials?: grpc.ServerCredentials;
}

/** A status error for a handler to throw: the grpc-js server sends it as the call's status. */
export function statusError(code: grpc.status, details: string, metadata?: grpc.Metadata): Partial<grpc.StatusObject> {
  return { code, details, ...(metadata && { metadata }) };
}

export async function startReplica(opts: ReplicaOptions): Promise<TestReplica> {
  const { name, host = "127.0.0.1" } = opts;
  const calls: ReplicaCall[] = [];
  const pet = { id: "1", name, categoryId: "1", status: "PET_STATUS_AVAILABLE" };
  const handlers: Record<PetMethodName, ReplicaHandler> = {
    ListPets: async () => ({ pets: [pet], nextPageToken: "" }),
    CreatePet: async ({ request }) => ({ pet: { ...pet, name: request.name }, replayed: false }),
    GetPet: async () => Promise.reject(statusError(grpc.status.NOT_FOUND, "no such pet")),
  };
  const server = new grpc.Server(opts.serverOptions);
  const definition = withGeneratedCodecs(loadPetServiceDefinition())[PET_SERVICE_NAME] as grpc.ServiceDefinition;
  const implementation = Object.fromEntries(
    (Object.keys(handlers) as PetMethodName[]).map((method) => [
      method,
      (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        const recorded: ReplicaCall = { method, request: call.request, metadata: call.metadata, deadline: call.getDeadline(), auth: call.getAuthContext(), call };
        calls.push(recorded);
        handlers[method](recorded).then(
          (reply) => callback(null, reply),
          (err: Partial<grpc.StatusObject>) => callback(err),
        );
      },
    ]),
  );
  server.addService(definition, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${opts.port ?? 0}`, opts.credentials ?? grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    name,
    address: `${host}:${port}`,
    port,
    calls,
    handle: (method, handler) => void (handlers[method] = handler),
    shutdown: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
    kill: () => server.forceShutdown(),
  };
}

/** Which replica served a ListPets reply of the default handler. */
export const servedBy = (reply: { pets: { name: string }[] }): string => reply.pets[0]!.name;
