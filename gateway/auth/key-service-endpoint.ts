/** KEYS_URL and KEYS_SERVICE_TOKEN (scope `gateway`), as every call of the gateway to the key service takes them. */
export interface KeyServiceAccess {
  url: string;
  token: string | undefined;
}

/**
 * The key service's base URL (no trailing slash) and the headers of a call: JSON, `extra`, and the
 * token (none when unset: the key service then refuses the call with 401, which the caller reports).
 */
export function keyServiceEndpoint(access: KeyServiceAccess, extra: Record<string, string> = {}): { base: string; headers: Record<string, string> } {
  return {
    base: access.url.replace(/\/+$/, ""),
    headers: { Accept: "application/json", ...extra, ...(access.token && { Authorization: `Bearer ${access.token}` }) },
  };
}
