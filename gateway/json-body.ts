import { isLosslessNumber, parse, type LosslessNumber } from "lossless-json";
import { ApiError } from "./errors.js";

/**
 * Request bodies are parsed losslessly: every number stays its literal text (LosslessNumber),
 * so an int64 like 9007199254740993 reaches the pet service unrounded. Node's JSON.parse would
 * round it. Keys such as `__proto__` become plain own properties, never prototypes.
 */
export function parseJsonBody(text: string): unknown {
  try {
    return parse(text);
  } catch {
    // The parser's message quotes input positions only; keep the client message generic anyway.
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
}

export { isLosslessNumber, type LosslessNumber };

/** A plain JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isLosslessNumber(value);
}
