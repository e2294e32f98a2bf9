import express, { type RequestHandler } from "express";
import { ApiError } from "../../lib/http/errors.ts";

/** Admin requests are small: a key's fields and a small metadata object. */
export const BODY_LIMIT_BYTES = 16 * 1024;

const rawParser = (limit: number) => express.raw({ type: () => true, limit });

/**
 * Reads a JSON body of one of `types` into req.body: 413 `payload_too_large` over the limit,
 * 415 `unsupported_media_type` for another Content-Type, 400 for text that is not JSON. An absent
 * body is `{}` (POST /v1/keys/{id}/revoke needs none).
 */
export function jsonBody(types: readonly string[] = ["application/json"], limitBytes = BODY_LIMIT_BYTES): RequestHandler {
  const raw = rawParser(limitBytes);
  return (req, res, next) =>
    raw(req, res, (err?: unknown) => {
      if (err) return next(err);
      const bytes = req.body as Buffer | undefined;
      if (!Buffer.isBuffer(bytes) || bytes.length === 0) {
        req.body = {};
        return next();
      }
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (!types.includes(type)) {
        return next(new ApiError("unsupported_media_type", `The request body must be ${types.join(" or ")}.`));
      }
      try {
        req.body = JSON.parse(bytes.toString("utf8"));
      } catch {
        return next(new ApiError("invalid_request", "The request body is not valid JSON."));
      }
      next();
    });
}
