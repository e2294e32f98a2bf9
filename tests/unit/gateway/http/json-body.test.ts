/** The request-body parser: lossless numbers, no prototypes from keys, bounded nesting, one error shape. */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../../lib/http/errors.ts";
import { isLosslessNumber, MAX_JSON_DEPTH, parseJsonBody } from "../../../../gateway/http/json-body.ts";

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);

function refusal(text: string): ApiError {
  try {
    parseJsonBody(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error("expected a refusal");
}

describe("parseJsonBody", () => {
  it(`accepts nesting up to ${MAX_JSON_DEPTH} levels and refuses deeper with 400 invalid_request`, () => {
    expect(() => parseJsonBody(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(() => parseJsonBody(nested(MAX_JSON_DEPTH, '{"a":', "}").replace(/:}/, ":1}"))).not.toThrow();
    for (const text of [nested(MAX_JSON_DEPTH + 1), nested(MAX_JSON_DEPTH + 1, "{", "}"), nested(100_000), "[".repeat(1_000_000)]) {
      const err = refusal(text);
      expect(err.code).toBe("invalid_request");
      expect(err.message).toMatch(/deeper than/);
    }
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const name = `${"[".repeat(100)}\\"${"{".repeat(100)}\\\\`;
    expect(parseJsonBody(`{"name":"${name}","categoryId":1}`)).toMatchObject({ name: `${"[".repeat(100)}"${"{".repeat(100)}\\` });
  });

  it("keeps numbers as their literal text", () => {
    const body = parseJsonBody('{"a":9223372036854775807,"b":1e400}') as Record<string, unknown>;
    expect(isLosslessNumber(body.a) && body.a.value).toBe("9223372036854775807");
    expect(isLosslessNumber(body.b) && body.b.value).toBe("1e400");
  });

  it("makes __proto__ and constructor own keys, never prototypes", () => {
    const body = parseJsonBody('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["__proto__", "constructor"]);
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['{"a":1,"a":2}', "{not json", "", " ", "[1,]", '{"a":1}x', '"\u0000"', "NaN", "01"])("refuses %j with a generic 400", (text) => {
    const err = refusal(text);
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("The request body is not valid JSON.");
  });
});
