import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPageTokens } from "../../../pet-service/page-token.ts";
import { PET_STATUSES, type PetStatus } from "../../../pet-service/store/pet-store.ts";

const tokens = createPageTokens(randomBytes(32));
const INT64_MAX = 2n ** 63n - 1n;
const statusOrAll = fc.constantFrom<PetStatus | undefined>(undefined, ...PET_STATUSES);

describe("page tokens", () => {
  it("are opaque base64url and give back the position under the filter they were issued for", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: INT64_MAX }), statusOrAll, (afterId, status) => {
        const token = tokens.encode(status ? { afterId, status } : { afterId });
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(tokens.decode(token, status)).toEqual({ afterId });
      }),
    );
  });

  it("refuse a token used under another status filter", () => {
    const token = tokens.encode({ afterId: 5n, status: "sold" });
    for (const other of [undefined, "available", "pending"] as const) {
      expect(tokens.decode(token, other)).toEqual({ problem: "other_filter" });
    }
    expect(tokens.decode(tokens.encode({ afterId: 5n }), "sold")).toEqual({ problem: "other_filter" });
  });

  it("refuse every token with one character changed (altered or forged), never reading a position from it", () => {
    const token = tokens.encode({ afterId: 123_456n, status: "pending" });
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    fc.assert(
      fc.property(fc.nat({ max: token.length - 1 }), fc.constantFrom(...alphabet), (at, replacement) => {
        fc.pre(token[at] !== replacement);
        const altered = token.slice(0, at) + replacement + token.slice(at + 1);
        expect(tokens.decode(altered, "pending")).toHaveProperty("problem");
      }),
    );
  });

  it("refuse every other spelling of the last character (its two unused bits)", () => {
    const token = tokens.encode({ afterId: 7n });
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (const last of alphabet) {
      if (last === token.at(-1)) continue;
      expect(tokens.decode(token.slice(0, -1) + last, undefined)).toHaveProperty("problem");
    }
  });

  it("refuse a token signed with another secret (another database)", () => {
    const foreign = createPageTokens(randomBytes(32)).encode({ afterId: 1n });
    expect(tokens.decode(foreign, undefined)).toEqual({ problem: "not_issued" });
  });

  it.each(["", "x", "%%%", "A".repeat(35), "A".repeat(36), "A".repeat(10_000), "eyJsYXN0SWQiOjV9"])(
    "refuse malformed input %#",
    (token) => {
      expect(tokens.decode(token, undefined)).toEqual(expect.objectContaining({ problem: expect.stringMatching(/malformed|not_issued/) }));
    },
  );
});
