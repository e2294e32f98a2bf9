import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * The gRPC richer error model: google.rpc.Status carrying a google.rpc.BadRequest (or a
 * google.rpc.ErrorInfo) in the `grpc-status-details-bin` trailer. The pet service writes it;
 * the gateway (and any other client: grpcurl, Go's status.FromError, …) reads each offending
 * field (or the error's reason) from it.
 */
export interface FieldViolation {
  /** The proto field name, e.g. `category_id`. */
  field: string;
  description: string;
}

export const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest";
const ERROR_INFO_TYPE_URL = "type.googleapis.com/google.rpc.ErrorInfo";

/** The google.rpc.ErrorInfo domain of the pet service's reasons. */
export const PETSTORE_ERROR_DOMAIN = "petstore.v1";

/** google.rpc.ErrorInfo: a machine-readable reason (UPPER_SNAKE_CASE) within a domain. */
export interface ErrorInfo {
  reason: string;
  domain: string;
  metadata?: Record<string, string>;
}

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
              ErrorInfo: {
                fields: {
                  reason: { type: "string", id: 1 },
                  domain: { type: "string", id: 2 },
                  // map<string, string>: protobufjs's IMapField, which fromJSON's IField type does not list.
                  metadata: { keyType: "string", type: "string", id: 3 } as { type: string; id: number },
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
const ErrorInfoCodec = RICH_ERRORS["google.rpc.ErrorInfo"] as Codec<ErrorInfo>;

/** Trailing metadata carrying `violations` as a google.rpc.BadRequest. */
export function badRequestMetadata(code: grpc.status, message: string, violations: FieldViolation[]): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(
    STATUS_DETAILS_KEY,
    StatusCodec.serialize({ code, message, details: [{ typeUrl: BAD_REQUEST_TYPE_URL, value: BadRequestCodec.serialize({ fieldViolations: violations }) }] }),
  );
  return metadata;
}

/** Trailing metadata carrying `info` as a google.rpc.ErrorInfo. */
export function errorInfoMetadata(code: grpc.status, message: string, info: ErrorInfo): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(
    STATUS_DETAILS_KEY,
    StatusCodec.serialize({ code, message, details: [{ typeUrl: ERROR_INFO_TYPE_URL, value: ErrorInfoCodec.serialize({ metadata: {}, ...info }) }] }),
  );
  return metadata;
}

/** The field violations of an error received from the pet service; [] when it carries none. */
export function fieldViolationsOf(error: { metadata?: grpc.Metadata }): FieldViolation[] {
  return detailsOf(error, BAD_REQUEST_TYPE_URL).flatMap((value) => BadRequestCodec.deserialize(value).fieldViolations);
}

/** The google.rpc.ErrorInfo of an error received from the pet service, if it carries one. */
export function errorInfoOf(error: { metadata?: grpc.Metadata }): ErrorInfo | undefined {
  try {
    const [value] = detailsOf(error, ERROR_INFO_TYPE_URL);
    return value && ErrorInfoCodec.deserialize(value);
  } catch {
    return undefined; // undecodable details: the status code alone decides
  }
}

/** The packed values of the google.rpc.Status details of one type. */
function detailsOf(error: { metadata?: grpc.Metadata }, typeUrl: string): Buffer[] {
  return (error.metadata?.get(STATUS_DETAILS_KEY) ?? [])
    .filter((value): value is Buffer => Buffer.isBuffer(value))
    .flatMap((value) => StatusCodec.deserialize(value).details)
    .filter((any) => any.typeUrl === typeUrl)
    .map((any) => any.value);
}
