import fc from "fast-check";
import type * as protoLoader from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";
import { petstore_v1_PetService as CODECS } from "../../../proto/codecs.generated.ts";
import { withGeneratedCodecs } from "../../../proto/generated-codecs.ts";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../../../proto/load.ts";
import { createPageTokens } from "../../../pet-service/page-token.ts";
import { PET_STATUSES } from "../../../pet-service/store/pet-store.ts";

/**
 * The generated codecs against proto-loader (protobufjs), byte for byte: every message the
 * service uses, random contents in both directions.
 */
const definition = loadPetServiceDefinition();
const loader = definition[PET_SERVICE_NAME] as protoLoader.ServiceDefinition;
const RUNS = 300;

const INT64_EXTREMES = [
  "0", "1", "-1", "127", "128", "2147483647", "-2147483648", "4294967295", "4294967296",
  "9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993",
  "9223372036854775807", "-9223372036854775808", "999999999999999", "1000000000000000",
];
const int64 = fc.oneof(
  fc.constantFrom(...INT64_EXTREMES),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  fc.bigInt({ min: 0n, max: 2n ** 53n }).map(String),
);
const int32 = fc.oneof(fc.constantFrom(0, 1, -1, 127, 128, 2 ** 31 - 1, -(2 ** 31)), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const STATUS_NAMES = ["PET_STATUS_UNSPECIFIED", "PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"];
/** Every enum name, and numbers in and outside the enum (which decode as numbers). */
const status = fc.oneof(fc.constantFrom(...STATUS_NAMES), fc.integer({ min: -3, max: 9 }));
/**
 * Unicode of every plane (well-formed), and runs of 2- and 3-byte characters long enough to need a
 * two-byte length (the encoder takes a shortcut below 43 UTF-16 units).
 */
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 200 }),
  fc.string({ unit: fc.constantFrom("猫", "€", "ü", "a", "🐕"), minLength: 30, maxLength: 90 }),
  fc.string(),
);
const pageToken = fc.oneof(
  fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), fc.option(fc.constantFrom(...PET_STATUSES), { nil: undefined }), fc.uint8Array({ minLength: 32, maxLength: 32 }))
    .map(([afterId, s, secret]) => createPageTokens(Buffer.from(secret)).encode({ afterId, ...(s && { status: s }) })),
  text,
);
/** Any subset of the fields present (proto-loader writes a present field even when it holds the default). */
const partial = <T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) => fc.record(fields, { requiredKeys: [] });
const pet = partial({ id: int64, name: text, categoryId: int64, status });

const MESSAGES: Record<string, { request: fc.Arbitrary<object>; response: fc.Arbitrary<object> }> = {
  ListPets: {
    request: partial({ limit: int32, status, pageToken }),
    response: partial({ pets: fc.array(pet, { maxLength: 101 }), nextPageToken: pageToken }),
  },
  CreatePet: {
    request: partial({ name: text, categoryId: int64, status, requestId: text }),
    response: partial({ pet: fc.oneof(pet, fc.constant(null)), replayed: fc.boolean() }),
  },
  GetPet: {
    request: partial({ id: int64 }),
    response: partial({ pet: fc.oneof(pet, fc.constant(null)) }),
  },
};

/** A field number this schema does not use, with a value of each wire type, appended to a message. */
const unknownField = fc
  .tuple(fc.integer({ min: 20, max: 2000 }), fc.constantFrom(0, 1, 2, 5), fc.uint8Array({ maxLength: 20 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }))
  .map(([field, wireType, bytes, n]) => {
    const varint = (v: bigint) => {
      const out: number[] = [];
      do {
        out.push(Number(v & 127n) | (v > 127n ? 128 : 0));
        v >>= 7n;
      } while (v > 0n);
      return out;
    };
    const tag = varint(BigInt((field << 3) | wireType));
    const value =
      wireType === 0 ? varint(n) : wireType === 1 ? [...bytes.slice(0, 8), ...Array(Math.max(0, 8 - bytes.length)).fill(0)]
      : wireType === 5 ? [...bytes.slice(0, 4), ...Array(Math.max(0, 4 - bytes.length)).fill(0)]
      : [...varint(BigInt(bytes.length)), ...bytes];
    return Buffer.from([...tag, ...value]);
  });

describe.each(Object.keys(MESSAGES))("%s", (method) => {
  const ours = CODECS[method]!;
  const theirs = loader[method]!;
  for (const side of ["request", "response"] as const) {
    const arbitrary = MESSAGES[method]![side];
    const serialize = side === "request" ? theirs.requestSerialize : theirs.responseSerialize;
    const deserialize = side === "request" ? theirs.requestDeserialize : theirs.responseDeserialize;

    it(`encodes every ${side} to the bytes proto-loader writes`, () => {
      fc.assert(
        fc.property(arbitrary, (message) => {
          expect(ours[side].encode(message).toString("hex")).toBe(serialize(message).toString("hex"));
        }),
        { numRuns: RUNS },
      );
    });

    it(`decodes the bytes of every ${side} to the object proto-loader gives, unknown fields skipped`, () => {
      fc.assert(
        fc.property(arbitrary, fc.array(unknownField, { maxLength: 2 }), (message, unknown) => {
          const bytes = Buffer.concat([serialize(message), ...unknown]);
          expect(ours[side].decode(bytes)).toStrictEqual(deserialize(bytes));
        }),
        { numRuns: RUNS },
      );
    });
  }
});

describe("the generated codecs on the service definition", () => {
  it("replace the four (de)serializers of every PetService method and keep the rest", () => {
    const swapped = withGeneratedCodecs(definition)[PET_SERVICE_NAME] as protoLoader.ServiceDefinition;
    expect(Object.keys(swapped)).toEqual(Object.keys(loader));
    for (const [name, method] of Object.entries(swapped)) {
      expect(method.path).toBe(loader[name]!.path);
      expect(method.requestSerialize).toBe(CODECS[name]!.request.encode);
      expect(method.responseDeserialize).toBe(CODECS[name]!.response.decode);
    }
  });

  it("refuse what proto-loader refuses: arrays and non-objects as messages, a non-array repeated field", () => {
    for (const bad of [[], "pets", 7]) {
      expect(() => CODECS.ListPets!.response.encode(bad)).toThrow(TypeError);
      expect(() => loader.ListPets!.responseSerialize(bad as object)).toThrow();
    }
    expect(() => CODECS.ListPets!.response.encode({ pets: {} })).toThrow(TypeError);
    expect(() => CODECS.CreatePet!.response.encode({ pet: "x" })).toThrow(TypeError);
  });

  it("refuse an int64 that is not a decimal integer instead of encoding some other number", () => {
    for (const bad of ["", "12a", "0x10", " 5", "1e3", 1.5, 2 ** 60, {}]) {
      expect(() => CODECS.GetPet!.request.encode({ id: bad })).toThrow(TypeError);
    }
  });

  it("refuse truncated input with an error rather than a wrong message", () => {
    const bytes = loader.ListPets!.responseSerialize({ pets: [{ id: "9223372036854775807", name: "Rex", categoryId: "1" }] });
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(() => CODECS.ListPets!.response.decode(bytes.subarray(0, cut))).toThrow(RangeError);
    }
  });
});
