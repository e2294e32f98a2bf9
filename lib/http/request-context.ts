import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Headers every JSON response of a credentialed API carries (also on the server's own parser errors). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "Cache-Control": "no-store",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
};

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, else a new UUID),
 * echoes it, and sets the headers every JSON response of a credentialed API should carry.
 */
export function requestContext(): RequestHandler {
  return (req, res, next) => {
    const given = req.headers["x-request-id"];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.locals.requestId = requestId;
    // setHeader, not res.set: these need none of its Content-Type handling, and this runs per request.
    res.setHeader("X-Request-Id", requestId);
    for (const name in SECURITY_HEADERS) res.setHeader(name, SECURITY_HEADERS[name]!);
    next();
  };
}
