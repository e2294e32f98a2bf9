import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkListQuery, checkNewPet, checkPetId, NAME_MAX_LENGTH, namesNoPet, type Checked } from "../../../pet-service/rules.ts";
import { createPageTokens } from "../../../pet-service/page-token.ts";
import type { CreatePetRequestInit, PetStatus } from "../../../proto/generated/petstore-v1.ts";
import { INT64_MAX } from "../../../lib/int64.ts";
import type { FieldViolation } from "../../../lib/grpc-status-details.ts";

const valid = { name: "Rex", categoryId: "1" } as const;
const violationsOf = <T>(checked: Checked<T>): FieldViolation[] => (checked.ok ? [] : checked.violations);

describe("checkNewPet", () => {
  it("accepts a pet, trims its name and defaults its status to available", () => {
    expect(checkNewPet({ name: "  Rex \n", categoryId: "7" })).toEqual({
      ok: true,
      value: { name: "Rex", categoryId: 7n, status: "available" },
    });
    expect(checkNewPet({ ...valid, status: "PET_STATUS_UNSPECIFIED" })).toMatchObject({ value: { status: "available" } });
  });

  it.each([
    ["PET_STATUS_AVAILABLE", "available"],
    ["PET_STATUS_PENDING", "pending"],
    ["PET_STATUS_SOLD", "sold"],
  ] as const)("keeps status %s", (status, stored) => {
    expect(checkNewPet({ ...valid, status })).toMatchObject({ ok: true, value: { status: stored } });
  });

  it.each(["", "   ", "\t\n", undefined])("requires a name (%j)", (name) => {
    expect(violationsOf(checkNewPet({ ...valid, name }))).toEqual([{ field: "name", description: "name is required" }]);
  });

  it("counts the name bound in code points, not UTF-16 units", () => {
    const paws = "🐾".repeat(NAME_MAX_LENGTH);
    expect(checkNewPet({ ...valid, name: paws })).toMatchObject({ ok: true, value: { name: paws } });
    expect(violationsOf(checkNewPet({ ...valid, name: `${paws}🐾` }))).toEqual([
      { field: "name", description: "name must be at most 100 characters (got 101)" },
    ]);
  });

  it.each(["Re\u0000x", "Re\tx", "Re\nx", "Re\u001fx", "Re\u007fx", "Re\u0085x", "Re\u009fx"])(
    "refuses control characters inside the name (%j)",
    (name) => {
      expect(violationsOf(checkNewPet({ ...valid, name }))).toEqual([
        { field: "name", description: "name must not contain control characters" },
      ]);
    },
  );

  it("requires a category_id", () => {
    expect(violationsOf(checkNewPet({ name: "Rex" }))).toEqual([{ field: "category_id", description: "category_id is required" }]);
  });

  it.each(["0", "-1"])("refuses category_id %s as not positive (not as missing)", (categoryId) => {
    expect(violationsOf(checkNewPet({ ...valid, categoryId }))).toEqual([
      { field: "category_id", description: `category_id must be a positive integer, 1 to 9223372036854775807 (got ${categoryId})` },
    ]);
  });

  it.each(["-1", "-9223372036854775808", "9223372036854775808", "1.5", "abc"])("refuses category_id %s", (categoryId) => {
    expect(violationsOf(checkNewPet({ ...valid, categoryId }))).toEqual([
      { field: "category_id", description: expect.stringMatching(/^category_id must be/) },
    ]);
  });

  it("refuses a status number outside the enum", () => {
    const request = { ...valid, status: 7 as unknown as PetStatus };
    expect(violationsOf(checkNewPet(request))).toEqual([
      { field: "status", description: "status must be one of PET_STATUS_AVAILABLE, PET_STATUS_PENDING, PET_STATUS_SOLD (got 7)" },
    ]);
  });

  it("reports every offending field at once", () => {
    const request: CreatePetRequestInit = { name: " ", categoryId: "-3", status: 9 as unknown as PetStatus };
    expect(violationsOf(checkNewPet(request)).map((v) => v.field)).toEqual(["name", "category_id", "status"]);
  });

  it("property: any int64 category id 1..2^63-1 is kept exactly", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: INT64_MAX }), (id) => {
        expect(checkNewPet({ ...valid, categoryId: String(id) })).toMatchObject({ ok: true, value: { categoryId: id } });
      }),
    );
  });

  it("property: an accepted name is the trimmed input, 1..100 code points, free of control characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 120 }), (name) => {
        const checked = checkNewPet({ ...valid, name });
        const trimmed = name.trim();
        const acceptable = trimmed !== "" && [...trimmed].length <= NAME_MAX_LENGTH && !/[\u0000-\u001f\u007f-\u009f]/.test(trimmed);
        expect(checked.ok).toBe(acceptable);
        if (checked.ok) expect(checked.value.name).toBe(trimmed);
      }),
    );
  });
});

describe("checkListQuery", () => {
  const tokens = createPageTokens(randomBytes(32));

  it.each([undefined, 0])("uses 20 when the limit is %j", (limit) => {
    expect(checkListQuery({ limit }, tokens)).toEqual({ ok: true, value: { limit: 20 } });
  });

  it.each([1, 57, 100])("accepts limit %d", (limit) => {
    expect(checkListQuery({ limit }, tokens)).toEqual({ ok: true, value: { limit } });
  });

  it.each([101, -1, 2147483647, -2147483648])("refuses limit %d", (limit) => {
    expect(violationsOf(checkListQuery({ limit }, tokens))).toEqual([
      { field: "limit", description: `limit must be between 1 and 100 (got ${limit})` },
    ]);
  });

  it("filters by a known status, not by UNSPECIFIED, and refuses numbers outside the enum", () => {
    expect(checkListQuery({ status: "PET_STATUS_SOLD" }, tokens)).toEqual({ ok: true, value: { limit: 20, status: "sold" } });
    expect(checkListQuery({ status: "PET_STATUS_UNSPECIFIED" }, tokens)).toEqual({ ok: true, value: { limit: 20 } });
    const checked = checkListQuery({ limit: 500, status: 4 as unknown as PetStatus }, tokens);
    expect(violationsOf(checked).map((v) => v.field)).toEqual(["limit", "status"]);
  });

  it("starts after the id in a page token issued for the same filter; an empty token is the first page", () => {
    const token = tokens.encode({ afterId: 41n, status: "sold" });
    expect(checkListQuery({ status: "PET_STATUS_SOLD", pageToken: token }, tokens)).toEqual({
      ok: true,
      value: { limit: 20, status: "sold", afterId: 41n },
    });
    expect(checkListQuery({ pageToken: "" }, tokens)).toEqual({ ok: true, value: { limit: 20 } });
  });

  it.each([
    ["malformed", "not a token", /^page_token is malformed/],
    ["signed with another secret", createPageTokens(Buffer.alloc(32, 1)).encode({ afterId: 1n }), /^page_token was not issued by this service/],
  ])("refuses a page token that is %s, naming page_token", (_, pageToken, message) => {
    const [violation, ...rest] = violationsOf(checkListQuery({ pageToken }, tokens));
    expect(rest).toEqual([]);
    expect(violation).toMatchObject({ field: "page_token", description: expect.stringMatching(message) });
  });
});

describe("checkPetId", () => {
  it("accepts any int64 id exactly: 0 and negative ids are ids that name no pet", () => {
    expect(checkPetId({ id: "9223372036854775807" })).toEqual({ ok: true, value: INT64_MAX });
    for (const id of ["0", "-4", "-9223372036854775808"]) {
      expect(checkPetId({ id })).toEqual({ ok: true, value: BigInt(id) });
      expect(namesNoPet(BigInt(id))).toBe(true);
    }
    expect(namesNoPet(1n)).toBe(false);
  });

  it("requires an id", () => {
    expect(violationsOf(checkPetId({}))).toEqual([{ field: "id", description: "id is required" }]);
  });
});
