import * as grpc from "@grpc/grpc-js";
import {
  google_rpc_BadRequest as BadRequestCodec,
  google_rpc_ErrorInfo as ErrorInfoCodec,
  google_rpc_RetryInfo as RetryInfoCodec,
  google_rpc_Status as StatusCodec,
  type AnyInit,
  type BadRequest_FieldViolation,
  type ErrorInfo,
  type ErrorInfoInit,
} from "../proto/generated/google-rpc.ts";

/**
 * The gRPC richer error model: google.rpc.Status carrying a google.rpc.BadRequest, a
 * google.rpc.ErrorInfo and/or a google.rpc.RetryInfo in the `grpc-status-details-bin` trailer.
 * The pet service writes it; the gateway (and any other client: grpcurl, Go's status.FromError,
 * …) reads each offending field, the error's reason or the advised retry delay from it.
 */
/** A google.rpc.BadRequest.FieldViolation as we send and read it: the proto field name (`category_id`) and what is wrong. */
export type FieldViolation = Pick<BadRequest_FieldViolation, "field" | "description">;

export const STATUS_DETAILS_KEY = "grpc-status-details-bin";
const BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest";
const ERROR_INFO_TYPE_URL = "type.googleapis.com/google.rpc.ErrorInfo";
const RETRY_INFO_TYPE_URL = "type.googleapis.com/google.rpc.RetryInfo";

/** The google.rpc.ErrorInfo domain of the pet service's reasons. */
export const PETSTORE_ERROR_DOMAIN = "petstore.v1";
/** Reasons of that domain, a contract between the pet service (sets them) and the gateway (maps them). */
export const IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"; // a request_id reused for another request
export const STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"; // the storage cannot serve the call now

/** What a google.rpc.Status may carry besides its code and message. */
export interface StatusDetails {
  violations?: FieldViolation[];
  /** google.rpc.ErrorInfo: a machine-readable reason (UPPER_SNAKE_CASE) within a domain. */
  errorInfo?: ErrorInfoInit;
  /** google.rpc.RetryInfo: how long a client should wait before retrying. */
  retryDelayMs?: number;
}

/** Trailing metadata carrying `details` as a google.rpc.Status in `grpc-status-details-bin`. */
export function statusDetailsMetadata(code: grpc.status, message: string, details: StatusDetails): grpc.Metadata {
  const packed: AnyInit[] = [];
  if (details.violations) {
    packed.push({ type_url: BAD_REQUEST_TYPE_URL, value: BadRequestCodec.encode({ fieldViolations: details.violations }) });
  }
  if (details.errorInfo) {
    packed.push({ type_url: ERROR_INFO_TYPE_URL, value: ErrorInfoCodec.encode(details.errorInfo) });
  }
  if (details.retryDelayMs !== undefined) {
    const ms = details.retryDelayMs;
    const retryDelay = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
    packed.push({ type_url: RETRY_INFO_TYPE_URL, value: RetryInfoCodec.encode({ retryDelay }) });
  }
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_DETAILS_KEY, StatusCodec.encode({ code, message, details: packed }));
  return metadata;
}

/** The field violations of an error received from the pet service; [] when it carries none. */
export function fieldViolationsOf(error: { metadata?: grpc.Metadata }): FieldViolation[] {
  try {
    return detailsOf(error, BAD_REQUEST_TYPE_URL).flatMap((value) =>
      BadRequestCodec.decode(value).fieldViolations.map(({ field, description }) => ({ field, description })),
    );
  } catch {
    return []; // undecodable details: the status message alone describes the error
  }
}

/** The google.rpc.ErrorInfo of an error received from the pet service, if it carries one. */
export function errorInfoOf(error: { metadata?: grpc.Metadata }): ErrorInfo | undefined {
  try {
    const [value] = detailsOf(error, ERROR_INFO_TYPE_URL);
    return value && ErrorInfoCodec.decode(value);
  } catch {
    return undefined; // undecodable details: the status code alone decides
  }
}

/** The retry delay (ms) a google.rpc.RetryInfo advises, if the error carries one. */
export function retryDelayOf(error: { metadata?: grpc.Metadata }): number | undefined {
  try {
    const [value] = detailsOf(error, RETRY_INFO_TYPE_URL);
    const delay = value && RetryInfoCodec.decode(value).retryDelay;
    return delay ? Number(delay.seconds) * 1000 + Math.round(delay.nanos / 1_000_000) : undefined;
  } catch {
    return undefined; // undecodable details: no advice
  }
}

/** The packed values of the google.rpc.Status details of one type. */
function detailsOf(error: { metadata?: grpc.Metadata }, typeUrl: string): Buffer[] {
  return (error.metadata?.get(STATUS_DETAILS_KEY) ?? [])
    .filter((value): value is Buffer => Buffer.isBuffer(value))
    .flatMap((value) => StatusCodec.decode(value).details)
    .filter((any) => any.type_url === typeUrl)
    .map((any) => any.value);
}
