import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * The gRPC richer error model: google.rpc.Status carrying a google.rpc.BadRequest in the
 * `grpc-status-details-bin` trailer. The pet service writes it; the gateway (and any other
 * client: grpcurl, Go's status.FromError, …) reads each offending field from it.
 */
export interface FieldViolation {
  /** The proto field name, e.g. `category_id`. */
  field: string;
  description: string;
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

/** Trailing metadata carrying `violations` as a google.rpc.BadRequest. */
export function badRequestMetadata(code: grpc.status, message: string, violations: FieldViolation[]): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(
    STATUS_DETAILS_KEY,
    StatusCodec.serialize({ code, message, details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: BadRequestCodec.serialize({ fieldViolations: violations }) }] }),
  );
  return metadata;
}

/** The field violations of an error received from the pet service; [] when it carries none. */
export function fieldViolationsOf(error: { metadata?: grpc.Metadata }): FieldViolation[] {
  return (error.metadata?.get(STATUS_DETAILS_KEY) ?? [])
    .filter((value): value is Buffer => Buffer.isBuffer(value))
    .flatMap((value) => StatusCodec.deserialize(value).details)
    .filter((any) => any.typeUrl === BAD_REQUEST_TYPE_URL)
    .flatMap((any) => BadRequestCodec.deserialize(any.value).fieldViolations);
}
