import { z } from "zod";
import { KEY_ID_PATTERN } from "../../lib/api-key-format.ts";
import { invalidRequest, type ErrorDetail } from "../../lib/http/errors.ts";

/**
 * Parses one part of a request with a zod schema; a refusal is a 400 `invalid_request` naming
 * every offending field as the gateway does: `name` for the body's fields, `query.limit`,
 * `path.id`, `header.Idempotency-Key`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: "body" | "query" | "path" | "header"): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const prefix = where === "body" ? "" : `${where}.`;
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const issue of result.error.issues) {
    const keys = issue.code === "unrecognized_keys" ? issue.keys.map((k) => [...issue.path, k]) : [issue.path];
    for (const path of keys) {
      const field = path.length === 0 ? where : `${prefix}${path.map(String).join(".")}`;
      if (seen.has(field)) continue;
      seen.add(field);
      details.push({ field, message: issue.code === "unrecognized_keys" ? "is not a known field" : issue.message });
    }
  }
  throw invalidRequest(details);
}

/** A key id (`sub` of its tokens) in a request. */
export const keyId = z.string().regex(KEY_ID_PATTERN, "is not a key id");

/** The `{id}` of /v1/keys/{id}…. */
export const keyIdParam = z.object({ id: keyId });
