import { ApiError, invalidRequest } from "../../lib/http/errors.ts";
import { fromThrown } from "../../lib/http/error-response.ts";
import { StorageUnavailableError } from "../../lib/storage-faults.ts";
import { IdempotencyKeyReusedError, KeyConflictError, KeyNotFoundError, KeyValidationError } from "../operations/errors.ts";
import { InvalidCursorError, RegistryConflictError } from "../registry/store.ts";

/**
 * What the key service answers for what its parts throw: the registry's storage down or full
 * (503 with Retry-After, never another 5xx for it), a lost uniqueness race (409), what the key
 * operations refuse (400 naming fields, 404, 409 for a revoked key, 422); the rest as
 * every HTTP process of ours does (lib/http/error-response.ts).
 */
export function keyServiceError(err: unknown): ApiError {
  if (err instanceof StorageUnavailableError) {
    const apiError = new ApiError("service_unavailable", `The key registry cannot serve this now (${err.fault.replace("_", " ")}); retry later.`);
    apiError.retryAfterSeconds = 1;
    return apiError;
  }
  if (err instanceof KeyValidationError) return invalidRequest([...err.details]);
  if (err instanceof KeyNotFoundError) return new ApiError("not_found", "No such key.");
  if (err instanceof KeyConflictError) return new ApiError("conflict", err.message);
  if (err instanceof IdempotencyKeyReusedError) return new ApiError("idempotency_key_reused");
  if (err instanceof RegistryConflictError) return new ApiError("conflict", "That name or id is already taken.");
  if (err instanceof InvalidCursorError) return invalidRequest([{ field: "query.cursor", message: "is not a cursor from a previous page of this list" }]);
  return fromThrown(err);
}
