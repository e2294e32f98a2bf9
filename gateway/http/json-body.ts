import { isLosslessNumber, parse, type LosslessNumber } from "lossless-json";
import { ApiError } from "../../lib/http/errors.ts";

/**
 * Deepest nesting of arrays and objects a request body may have. NewPet is flat (depth 1); the
 * bound keeps the recursive parser's stack use small whatever BODY_LIMIT_BYTES allows
 * (`[[[[…` at 1 MB would be 500,000 levels).
 */
export const MAX_JSON_DEPTH = 32;

/** Whether arrays/objects in `text` nest deeper than `max`; strings are skipped, so `"[[["` does not count. */
function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/**
 * Request bodies are parsed losslessly: every number stays its literal text (LosslessNumber),
 * so an int64 like 9007199254740993 reaches the pet service unrounded. Node's JSON.parse would
 * round it. Keys such as `__proto__` become plain own properties, never prototypes; a repeated
 * key is refused (which one would count is ambiguous).
 */
export function parseJsonBody(text: string): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError("invalid_request", `The request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`);
  }
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
