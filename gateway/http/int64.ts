import { isInt64 } from "../../lib/int64.ts";

/** int64 handling: ids and category ids stay decimal strings end to end, checked by BigInt. */
const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/;

/**
 * The canonical decimal form of `text` when it is an integer literal within int64,
 * "out_of_range" when it is an integer outside int64, undefined when it is no integer at all.
 */
export function toInt64(text: string): string | "out_of_range" | undefined {
  if (!INTEGER_LITERAL.test(text)) return undefined;
  const value = BigInt(text);
  if (!isInt64(value)) return "out_of_range";
  return value.toString();
}
