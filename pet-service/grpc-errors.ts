import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { FieldViolation } from "./rules.js";

/**
 * The errors the pet service answers with. INVALID_ARGUMENT carries google.rpc.Status with a
 * google.rpc.BadRequest in `grpc-status-details-bin` (the gRPC richer error model), so any
 * client (grpcurl, Go's status.FromError, …) can read each offending field.
 */
export class RpcError extends Error {
  readonly details: string;

  constructor(
    readonly code: grpc.status,
    message: string,
    readonly metadata = new grpc.Metadata(),
  ) {
    super(message);
    this.name = "RpcError";
    this.details = message;
  }
}

export const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest";

/**
 * The few google.rpc / google.protobuf messages we need, declared inline (field numbers as in
 * googleapis) rather than as .proto files under proto/, which buf lints as our own contract.
 */
const RICH_ERRORS = protoLoader.fromJSON(
  {
    nested: {
      google: {
        nested: {
          protobuf: {
            nested: { Any: { fields: { typeUrl: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } } },
          },
          rpc: {
            nested: {
              Status: {
                fields: {
                  code: { type: "int32", id: 1 },
                  message: { type: "string", id: 2 },
                  details: { rule: "repeated", type: "google.protobuf.Any", id: 3 },
                },
              },
              BadRequest: {
                fields: { fieldViolations: { rule: "repeated", type: "FieldViolation", id: 1 } },
                nested: {
                  FieldViolation: {
                    fields: { field: { type: "string", id: 1 }, description: { type: "string", id: 2 } },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
  { keepCase: false, defaults: true },
);

interface StatusMessage {
  code: number;
  message: string;
  details: { typeUrl: string; value: Buffer }[];
}
interface BadRequestMessage {
  fieldViolations: FieldViolation[];
}
type Codec<T> = protoLoader.MessageTypeDefinition<T, T>;
const StatusCodec = RICH_ERRORS["google.rpc.Status"] as Codec<StatusMessage>;
const BadRequestCodec = RICH_ERRORS["google.rpc.BadRequest"] as Codec<BadRequestMessage>;

export function invalidArgument(violations: FieldViolation[]): RpcError {
  const message = violations.map((v) => v.description).join("; ");
  const badRequest = BadRequestCodec.serialize({ fieldViolations: violations });
  const metadata = new grpc.Metadata();
  metadata.set(
    STATUS_DETAILS_KEY,
    StatusCodec.serialize({
      code: grpc.status.INVALID_ARGUMENT,
      message,
      details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: badRequest }],
    }),
  );
  return new RpcError(grpc.status.INVALID_ARGUMENT, message, metadata);
}

export function notFound(message: string): RpcError {
  return new RpcError(grpc.status.NOT_FOUND, message);
}

/** What a caller sees of a failure we did not foresee: no SQL, no paths, no stack. */
export function internal(): RpcError {
  return new RpcError(grpc.status.INTERNAL, "internal error");
}

/** The field violations of an error received from the pet service; [] when it carries none. */
export function fieldViolationsOf(error: { metadata?: grpc.Metadata }): FieldViolation[] {
  return (error.metadata?.get(STATUS_DETAILS_KEY) ?? [])
    .filter((value): value is Buffer => Buffer.isBuffer(value))
    .flatMap((value) => StatusCodec.deserialize(value).details)
    .filter((any) => any.typeUrl === BAD_REQUEST_TYPE_URL)
    .flatMap((any) => BadRequestCodec.deserialize(any.value).fieldViolations);
}
