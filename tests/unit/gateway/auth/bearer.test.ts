import { describe, expect, it } from "vitest";
import { AuthError } from "../../../../lib/api-key-format.ts";
import { parseBearer } from "../../../../gateway/auth/bearer.ts";

const reasonOf = (header: string | undefined) => {
  try {
    parseBearer(header);
  } catch (err) {
    expect(err).toBeInstanceOf(AuthError);
    return (err as AuthError).reason;
  }
  return "accepted";
};

describe("parseBearer", () => {
  it.each(["Bearer abc.def.ghi", "bearer abc.def.ghi", "BEARER abc.def.ghi", "Bearer  abc.def.ghi", " Bearer abc.def.ghi "])(
    "accepts %j",
    (header) => expect(parseBearer(header)).toBe("abc.def.ghi"),
  );

  it("accepts every token68 character", () => {
    expect(parseBearer("Bearer aZ09-._~+/==")).toBe("aZ09-._~+/==");
  });

  it.each([undefined, "", "   "])("missing: %j", (header) => expect(reasonOf(header)).toBe("missing"));

  it.each([
    "Bearer",
    "Bearer ",
    "abc.def.ghi",
    "Basic dXNlcjpwYXNz",
    "Token abc.def.ghi",
    "Bearer abc def",
    "Bearer\tabc.def.ghi",
    "Bearer abc,def",
    "Bearer =abc",
    'Bearer "abc"',
  ])("malformed: %j", (header) => expect(reasonOf(header)).toBe("malformed"));
});
