/**
 * The one registry of error codes: each public `code`, the HTTP status it always carries and
 * its default message.
 * Every error body the gateway and the key service write is `{ code, message, status[, details] }` from here.
 */
export const ERRORS = {
  invalid_request: { status: 400, message: "The request is invalid." },
  unauthorized: { status: 401, message: "A valid API key is required: Authorization: Bearer <API_KEY>." },
  forbidden: { status: 403, message: "This API key may not do that." },
  not_found: { status: 404, message: "No such resource." },
  method_not_allowed: { status: 405, message: "Method not allowed on this resource." },
  request_timeout: { status: 408, message: "The request was not received in time." },
  conflict: { status: 409, message: "The request conflicts with the current state." },
  gone: { status: 410, message: "This operation has been removed." },
  payload_too_large: { status: 413, message: "The request body is too large." },
  unsupported_media_type: { status: 415, message: "The request body must be application/json." },
  idempotency_key_reused: {
    status: 422,
    message: "This Idempotency-Key was already used for a different request; resend that request, or use a new key.",
  },
  rate_limited: { status: 429, message: "Rate limit exceeded; retry after the time in Retry-After." },
  api_key_banned: { status: 429, message: "Temporarily banned for sending while rate limited; retry after the time in Retry-After." },
  header_fields_too_large: { status: 431, message: "The request line or headers are too large." },
  client_closed_request: { status: 499, message: "The request was cancelled." },
  internal_error: { status: 500, message: "Internal error." },
  not_implemented: { status: 501, message: "Not implemented." },
  bad_gateway: { status: 502, message: "The upstream service failed." },
  service_unavailable: { status: 503, message: "The service is temporarily unavailable; retry later." },
  upstream_timeout: { status: 504, message: "The upstream service did not answer in time; retry later." },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * One offending input of an HTTP request: where it is (`name`, `query.limit`, `path.petId`) and what
 * is wrong; an item of the Error body's `details` (openapi.json's FieldViolation schema). The pet
 * service's google.rpc FieldViolation (lib/grpc-status-details.ts) is mapped to it.
 */
export interface ErrorDetail {
  field: string;
  message: string;
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
  details?: ErrorDetail[];
}

export class ApiError extends Error {
  readonly status: number;
  /** Retry-After (seconds) of a 503; sendError writes 1 when a 503 carries none. */
  retryAfterSeconds?: number;

  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;

  constructor(code: ErrorCode, message: string = ERRORS[code].message, details?: ErrorDetail[]) {
    super(message);
    this.code = code;
    this.details = details;
    this.name = "ApiError";
    this.status = ERRORS[code].status;
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message, status: this.status };
    if (this.details?.length) body.details = this.details;
    return body;
  }
}

/** 400 naming every offending field; the message lists them so a human sees them all at once. */
export function invalidRequest(details: ErrorDetail[]): ApiError {
  const message = details.map((d) => `${d.field}: ${d.message}`).join("; ");
  return new ApiError("invalid_request", message, details);
}
