/**
 * The gateway's calls to the key service about usage, with KEYS_SERVICE_TOKEN (scope gateway):
 * a key's history for GET /v1/me/usage. (Reports go from reporter.ts.)
 */
import { ApiError } from "../../lib/http/errors.ts";
import { keyServiceEndpoint, type KeyServiceAccess } from "../auth/key-service-endpoint.ts";

const HISTORY_TIMEOUT_MS = 5_000;

export interface HistoryAnswer {
  status: number;
  body: string;
}

export type HistoryReader = (keyId: string, query: URLSearchParams) => Promise<HistoryAnswer>;

/** Unreachable, failing or slow key service: 503 with Retry-After (the history is not the gateway's to make up). */
const HISTORY_UNAVAILABLE = Object.assign(new ApiError("service_unavailable", "The usage history cannot be read now; retry after the time in Retry-After."), {
  retryAfterSeconds: 5,
});

export function keyServiceHistory(access: KeyServiceAccess): HistoryReader {
  const { base, headers } = keyServiceEndpoint(access);
  return async (keyId, query) => {
    let res: Response;
    try {
      res = await fetch(`${base}/v1/keys/${encodeURIComponent(keyId)}/usage/history?${query}`, { headers, signal: AbortSignal.timeout(HISTORY_TIMEOUT_MS) });
    } catch {
      throw HISTORY_UNAVAILABLE;
    }
    const body = await res.text().catch(() => undefined);
    // The client's own mistake (a bad range) is answered as the key service words it; anything else is ours.
    if (body !== undefined && (res.status === 200 || res.status === 400)) return { status: res.status, body };
    throw HISTORY_UNAVAILABLE;
  };
}
