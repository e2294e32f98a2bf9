import type { RequestHandler, Response } from "express";
import { ApiError } from "../../lib/http/errors.ts";
import { ADMIN_TOKEN_PATTERN, allowsAny, hashAdminToken, type AdminScope } from "../admin-tokens/tokens.ts";
import type { AdminTokenRecord, KeyRegistry } from "../registry/store.ts";

/** The admin token a request was authenticated with (never the token itself). */
export interface Caller {
  id: string;
  name: string;
  scopes: string[];
}

export const callerOf = (res: Response): Caller => res.locals.caller as Caller;

/**
 * `Authorization: Bearer <admin token>` with one of `scopes` (`admin` implies every scope): 401
 * `unauthorized` with `WWW-Authenticate: Bearer` for no, a malformed, an unknown or a revoked
 * token; 403 `forbidden` for a token without the scope. Looked up by its SHA-256 on every request,
 * so a revocation holds from the next request on every replica.
 */
export function requireScope(registry: KeyRegistry, ...scopes: AdminScope[]): RequestHandler {
  return async (req, res, next) => {
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
    let found: AdminTokenRecord | undefined;
    if (match && ADMIN_TOKEN_PATTERN.test(match[1]!)) found = await registry.findAdminTokenByHash(hashAdminToken(match[1]!));
    if (!found || found.revokedAt !== null) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="key-service"');
      throw new ApiError(
        "unauthorized",
        
        header === undefined
          ? "An admin token is required: Authorization: Bearer <admin token>."
          : found
            ? "This admin token has been revoked."
            : "The admin token is not valid.",
      );
    }
    res.locals.caller = { id: found.id, name: found.name, scopes: found.scopes } satisfies Caller;
    if (!allowsAny(found.scopes, scopes)) {
      throw new ApiError("forbidden", `This admin token lacks the scope this needs: ${scopes.join(" or ")}.`);
    }
    next();
  };
}
