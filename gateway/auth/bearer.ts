import { AuthError } from "../../lib/api-key-format.ts";

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The token of an `Authorization: Bearer <token>` header. The scheme is case-insensitive
 * (RFC 9110); exactly one token follows. Throws AuthError "missing" or "malformed".
 */
export function parseBearer(header: string | undefined): string {
  if (header === undefined || header.trim() === "") {
    throw new AuthError("missing", "missing API key: send Authorization: Bearer <key>");
  }
  const parts = header.trim().split(/ +/);
  if (parts.length !== 2 || parts[0]!.toLowerCase() !== "bearer" || !TOKEN68.test(parts[1]!)) {
    throw new AuthError("malformed", "malformed Authorization header: expected Bearer <key>");
  }
  return parts[1]!;
}
