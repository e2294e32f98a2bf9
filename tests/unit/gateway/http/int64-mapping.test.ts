/**
 * Properties of the JSON ↔ proto mapping of int64 fields (`id`, `categoryId`, `petId`): every
 * int64 crosses both ways exactly, as a JSON number; values just outside int64 and numerals that
 * are no integer literal (fractions, exponents) are refused with 400 naming the field.
 */
import fc from "fast-check";
import { parse } from "lossless-json";
import { describe, expect, it } from "vitest";
import type { Pet } from "../../../../proto/generated/petstore-v1.ts";
import { ApiError } from "../../../../lib/http/errors.ts";
import { toInt64 } from "../../../../gateway/http/int64.ts";
import { parseJsonBody } from "../../../../gateway/http/json-body.ts";
import { petJson, petsJson, toCreatePetRequest } from "../../../../gateway/http/pet-mapping.ts";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const RUNS = { numRuns: 2_000 };

/** Any int64, with the boundaries, their neighbours, 0, ±1 and ±2^53±1 (where doubles stop being exact) drawn often. */
const int64 = fc.oneof(
  { weight: 4, arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      INT64_MIN,
      INT64_MIN + 1n,
      INT64_MAX,
      INT64_MAX - 1n,
      0n,
      1n,
      -1n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
    ),
  },
  // Small magnitudes too: fc.bigInt over the whole range almost never draws them.
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 20n), max: 2n ** 20n }) },
);

/** Integers outside int64: just outside, and far outside. */
const outsideInt64 = fc.oneof(
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 2n ** 64n, -(2n ** 64n)),
  fc.bigInt({ min: INT64_MAX + 1n, max: INT64_MAX + 1000n }),
  fc.bigInt({ min: INT64_MIN - 1000n, max: INT64_MIN - 1n }),
  fc.bigInt({ min: INT64_MAX + 1n, max: 10n ** 400n }),
  fc.bigInt({ min: -(10n ** 400n), max: INT64_MIN - 1n }),
);

const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: min, maxLength: max });
const exponent = fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), digits(1, 4)).map((p) => p.join(""));

/** Valid JSON numbers that are not integer literals: fractions and exponents (even 1.0, 1e0, 1e400). */
const nonIntegerNumeral = fc.oneof(
  fc.tuple(int64, digits(1, 20)).map(([n, frac]) => `${n}.${frac}`),
  fc.tuple(int64, exponent).map(([n, e]) => `${n}${e}`),
  fc.tuple(int64, digits(1, 20), exponent).map(([n, frac, e]) => `${n}.${frac}${e}`),
  fc.constantFrom("1.0", "-0.0", "1e0", "1E2", "1e400", "-1e400", "1e-400", "9223372036854775807.0", "9.223372036854775807e18"),
);

/** A NewPet body as a client writes it, with the number's literal text. */
const newPetBody = (categoryId: string) => `{"name":"x","categoryId":${categoryId}}`;

/** The body a client reads back, its numbers as BigInt (no rounding). */
const readBack = (text: string) => parse(text, null, (value) => BigInt(value));

function violationsOf(fn: () => unknown): { field: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return (err as ApiError).details ?? [];
  }
  throw new Error("expected a 400 ApiError");
}

describe("JSON → CreatePetRequestInit", () => {
  it("maps every int64 categoryId to its exact decimal string", () => {
    fc.assert(
      fc.property(int64, (n) => {
        expect(toCreatePetRequest(parseJsonBody(newPetBody(String(n))))).toEqual({ name: "x", categoryId: String(n) });
      }),
      RUNS,
    );
  });

  it("refuses integers just and far outside int64, naming categoryId", () => {
    fc.assert(
      fc.property(outsideInt64, (n) => {
        const violations = violationsOf(() => toCreatePetRequest(parseJsonBody(newPetBody(String(n)))));
        expect(violations).toEqual([{ field: "categoryId", message: "must fit in int64" }]);
      }),
      RUNS,
    );
  });

  it("refuses numerals that are no integer literal (fractions, exponents), naming categoryId", () => {
    fc.assert(
      fc.property(nonIntegerNumeral, (numeral) => {
        // Valid JSON: the refusal is the mapping's, not the parser's.
        expect(() => parse(numeral)).not.toThrow();
        const violations = violationsOf(() => toCreatePetRequest(parseJsonBody(newPetBody(numeral))));
        expect(violations).toEqual([{ field: "categoryId", message: "must be an integer" }]);
      }),
      RUNS,
    );
  });
});

describe("Pet → JSON", () => {
  it("writes every int64 id and categoryId as a JSON number a lossless reader gets back exactly", () => {
    fc.assert(
      fc.property(int64, int64, (id, categoryId) => {
        const text = petJson({ id: String(id), name: "x", categoryId: String(categoryId), status: "PET_STATUS_SOLD" });
        expect(text).toBe(`{"id":${id},"name":"x","categoryId":${categoryId},"status":"sold"}`);
        expect(readBack(text)).toEqual({ id, name: "x", categoryId, status: "sold" });
      }),
      RUNS,
    );
  });

  it("round-trips: a client's categoryId comes back unchanged through the mapping both ways", () => {
    fc.assert(
      fc.property(int64, int64, fc.string({ unit: "grapheme", maxLength: 20 }), (id, categoryId, name) => {
        const request = toCreatePetRequest(parseJsonBody(JSON.stringify({ name }).replace(/}$/, `,"categoryId":${categoryId}}`)));
        // What the pet service would answer with (it owns the id and the business rules).
        const pet: Pet = { id: String(id), name: request.name ?? "", categoryId: String(request.categoryId), status: "PET_STATUS_AVAILABLE" };
        const back = readBack(petsJson([pet, pet])) as unknown[];
        expect(back).toEqual([0, 1].map(() => ({ id, name: request.name ?? "", categoryId, status: "available" })));
      }),
      RUNS,
    );
  });

  it("refuses to write an id that is not a decimal integer (a pet-service bug, never client input)", () => {
    for (const bad of ["1.5", "1e3", "", "0x10", "12abc", " 1"]) {
      expect(() => petJson({ id: bad, name: "x", categoryId: "1", status: "PET_STATUS_SOLD" })).toThrow();
      expect(() => petJson({ id: "1", name: "x", categoryId: bad, status: "PET_STATUS_SOLD" })).toThrow();
    }
  });
});

describe("path → GetPetRequestInit (toInt64)", () => {
  it("accepts every int64 in canonical form, and only that", () => {
    fc.assert(
      fc.property(int64, (n) => {
        expect(toInt64(String(n))).toBe(String(n));
      }),
      RUNS,
    );
    fc.assert(
      fc.property(outsideInt64, (n) => {
        expect(toInt64(String(n))).toBe("out_of_range");
      }),
      RUNS,
    );
    fc.assert(
      fc.property(nonIntegerNumeral, (numeral) => {
        expect(toInt64(numeral)).toBeUndefined();
      }),
      RUNS,
    );
  });

  it("refuses what is not a plain decimal integer", () => {
    for (const bad of ["", "-", "+1", "01", "-01", " 1", "1 ", "1_000", "0x10", "1n", "١٢", "Infinity", "NaN"]) {
      expect(toInt64(bad)).toBeUndefined();
    }
    expect(toInt64("-0")).toBe("0");
  });
});
