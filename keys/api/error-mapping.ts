import { ApiError } from "../../lib/http/errors.ts";
import { fromThrown } from "../../lib/http/error-response.ts";
import { StorageUnavailableError } from "../../lib/storage-faults.ts";
import { RegistryConflictError } from "../registry/store.ts";

/**
 * What the key service answers for what its parts throw: the registry's storage down or full
 * (503 with Retry-After, never another 5xx for it), a lost uniqueness race (409); the rest as
 * every HTTP process of ours does (lib/http/error-response.ts).
 */
export function keyServiceError(err: unknown): ApiError {
  if (err instanceof StorageUnavailableError) {
    const apiError = new ApiError("service_unavailable", `The key registry cannot serve this now (${err.fault.replace("_", " ")}); retry later.`);
    apiError.retryAfterSeconds = 1;
    return apiError;
  }
  if (err instanceof RegistryConflictError) return new ApiError("conflict", "That name or id is already taken.");
  return fromThrown(err);
}
