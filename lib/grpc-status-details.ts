import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * The gRPC richer error model: google.rpc.Status carrying a google.rpc.BadRequest, a
 * google.rpc.ErrorInfo and/or a google.rpc.RetryInfo in the `grpc-status-details-bin` trailer.
 * The pet service writes it; the gateway (and any other client: grpcurl, Go's status.FromError,
 * …) reads each offending field, the error's reason or the advised retry delay from it.
 */
export interface FieldViolation {
  /** The proto field name, e.g. `category_id`. */
  field: string;
  description: string;
}

export const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest";
const ERROR_INFO_TYPE_URL = "type.googleapis.com/google.rpc.ErrorInfo";
const RETRY_INFO_TYPE_URL = "type.googleapis.com/google.rpc.RetryInfo";

/** The google.rpc.ErrorInfo domain of the pet service's reasons. */
export const PETSTORE_ERROR_DOMAIN = "petstore.v1";
/** Reasons of that domain, a contract between the pet service (sets them) and the gateway (maps them). */
export const IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"; // a request_id reused for another request
export const STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"; // the storage cannot serve the call now

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
            nested: {
              Any: { fields: { typeUrl: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } },
              Duration: { fields: { seconds: { type: "int64", id: 1 }, nanos: { type: "int32", id: 2 } } },
            },
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
              RetryInfo: { fields: { retryDelay: { type: "google.protobuf.Duration", id: 1 } } },
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
interface RetryInfoMessage {
  retryDelay?: { seconds: number | string; nanos: number } | null;
}
type Codec<T> = protoLoader.MessageTypeDefinition<T, T>;
const StatusCodec = RICH_ERRORS["google.rpc.Status"] as Codec<StatusMessage>;
const BadRequestCodec = RICH_ERRORS["google.rpc.BadRequest"] as Codec<BadRequestMessage>;
const ErrorInfoCodec = RICH_ERRORS["google.rpc.ErrorInfo"] as Codec<ErrorInfo>;
const RetryInfoCodec = RICH_ERRORS["google.rpc.RetryInfo"] as Codec<RetryInfoMessage>;

/** What a google.rpc.Status may carry besides its code and message. */
export interface StatusDetails {
  violations?: FieldViolation[];
  errorInfo?: ErrorInfo;
  /** google.rpc.RetryInfo: how long a client should wait before retrying. */
  retryDelayMs?: number;
}

/** Trailing metadata carrying `details` as a google.rpc.Status in `grpc-status-details-bin`. */
export function statusDetailsMetadata(code: grpc.status, message: string, details: StatusDetails): grpc.Metadata {
  const packed: StatusMessage["details"] = [];
  if (details.violations) {
    packed.push({ typeUrl: BAD_REQUEST_TYPE_URL, value: BadRequestCodec.serialize({ fieldViolations: details.violations }) });
  }
  if (details.errorInfo) {
    packed.push({ typeUrl: ERROR_INFO_TYPE_URL, value: ErrorInfoCodec.serialize({ metadata: {}, ...details.errorInfo }) });
  }
  if (details.retryDelayMs !== undefined) {
    const ms = details.retryDelayMs;
    const retryDelay = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
    packed.push({ typeUrl: RETRY_INFO_TYPE_URL, value: RetryInfoCodec.serialize({ retryDelay }) });
  }
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_DETAILS_KEY, StatusCodec.serialize({ code, message, details: packed }));
  return metadata;
}

/** The field violations of an error received from the pet service; [] when it carries none. */
export function fieldViolationsOf(error: { metadata?: grpc.Metadata }): FieldViolation[] {
  try {
    return detailsOf(error, BAD_REQUEST_TYPE_URL).flatMap((value) => BadRequestCodec.deserialize(value).fieldViolations);
  } catch {
    return []; // undecodable details: the status message alone describes the error
  }
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

/** The retry delay (ms) a google.rpc.RetryInfo advises, if the error carries one. */
export function retryDelayOf(error: { metadata?: grpc.Metadata }): number | undefined {
  try {
    const [value] = detailsOf(error, RETRY_INFO_TYPE_URL);
    const delay = value && RetryInfoCodec.deserialize(value).retryDelay;
    return delay ? Number(delay.seconds) * 1000 + Math.round(delay.nanos / 1_000_000) : undefined;
  } catch {
    return undefined; // undecodable details: no advice
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
