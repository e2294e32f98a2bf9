import type { RequestHandler } from "express";
import type { AdminScope } from "../admin-tokens/tokens.ts";

/** One operation of the admin API; app.ts mounts it with its label, authentication, body reader and 405s. */
export interface Route {
  method: "get" | "post" | "patch" | "delete";
  /** Express path template, e.g. /v1/keys/:id. */
  path: string;
  /** Scopes of which the admin token needs one; absent: no token (JWKS, probes, docs). */
  scopes?: AdminScope[];
  /** Content types of a JSON body this operation reads; absent: it reads none. */
  body?: readonly string[];
  /** Largest body it reads (default body.ts's BODY_LIMIT_BYTES). */
  bodyLimitBytes?: number;
  handle: RequestHandler;
}
