import { createRequire } from "node:module";
import path from "node:path";
import fc from "fast-check";
import * as protoLoader from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";
import type { Codec } from "../../../proto/codec-runtime.ts";
import * as GOOGLE_RPC from "../../../proto/generated/google-rpc.ts";
import { petstore_v1_PetService } from "../../../proto/generated/petstore-v1.ts";
import { withGeneratedCodecs } from "../../../proto/generated-codecs.ts";
import { LOADER_OPTIONS, loadPetServiceDefinition, PET_SERVICE_NAME } from "../../../proto/load.ts";
import { createPageTokens } from "../../../pet-service/page-token.ts";
import { PET_STATUSES } from "../../../pet-service/store/pet-store.ts";

/**
 * The generated codecs against proto-loader (protobufjs), byte for byte: every message the
 * service uses and the google.rpc error details, random contents in both directions.
 */
/** The codecs as the tests drive them: with values no type allows, too. */
type AnyCodec = Codec<unknown, unknown>;
const CODECS = petstore_v1_PetService as unknown as Record<string, { request: AnyCodec; response: AnyCodec }>;
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

/** Checks `ours` against proto-loader's (de)serializer of the same message on random contents. */
function agreesWithProtoLoader(
  what: string,
  ours: AnyCodec,
  theirs: { serialize(value: object): Buffer; deserialize(bytes: Buffer): object },
  arbitrary: fc.Arbitrary<object>,
): void {
  it(`encodes every ${what} to the bytes proto-loader writes`, () => {
    fc.assert(
      fc.property(arbitrary, (message) => {
        expect(ours.encode(message).toString("hex")).toBe(theirs.serialize(message).toString("hex"));
      }),
      { numRuns: RUNS },
    );
  });

  it(`decodes the bytes of every ${what} to the object proto-loader gives, unknown fields skipped`, () => {
    fc.assert(
      fc.property(arbitrary, fc.array(unknownField, { maxLength: 2 }), (message, unknown) => {
        const bytes = Buffer.concat([theirs.serialize(message), ...unknown]);
        expect(ours.decode(bytes)).toStrictEqual(theirs.deserialize(bytes));
      }),
      { numRuns: RUNS },
    );
  });
}

describe.each(Object.keys(MESSAGES))("%s", (method) => {
  const ours = CODECS[method]!;
  const theirs = loader[method]!;
  agreesWithProtoLoader("request", ours.request, { serialize: theirs.requestSerialize, deserialize: theirs.requestDeserialize }, MESSAGES[method]!.request);
  agreesWithProtoLoader("response", ours.response, { serialize: theirs.responseSerialize, deserialize: theirs.responseDeserialize }, MESSAGES[method]!.response);
});

// The rich error model, from the same .proto files (google-proto-files) proto-loader reads here.
const googleProtos = path.dirname(createRequire(import.meta.url).resolve("google-proto-files/package.json"));
const googleRpc = protoLoader.loadSync(["google/rpc/status.proto", "google/rpc/error_details.proto"], { ...LOADER_OPTIONS, includeDirs: [googleProtos] });
const bytes = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b));
const localized = partial({ locale: text, message: text });
const GOOGLE_MESSAGES: Record<string, { ours: AnyCodec; arbitrary: fc.Arbitrary<object> }> = {
  "google.rpc.Status": {
    ours: GOOGLE_RPC.google_rpc_Status as AnyCodec,
    arbitrary: partial({ code: int32, message: text, details: fc.array(partial({ type_url: text, value: bytes }), { maxLength: 3 }) }),
  },
  "google.rpc.BadRequest": {
    ours: GOOGLE_RPC.google_rpc_BadRequest as AnyCodec,
    arbitrary: partial({
      fieldViolations: fc.array(partial({ field: text, description: text, reason: text, localizedMessage: fc.oneof(localized, fc.constant(null)) }), { maxLength: 4 }),
    }),
  },
  "google.rpc.ErrorInfo": {
    ours: GOOGLE_RPC.google_rpc_ErrorInfo as AnyCodec,
    arbitrary: partial({ reason: text, domain: text, metadata: fc.dictionary(text, text, { maxKeys: 4 }) }),
  },
  "google.rpc.RetryInfo": {
    ours: GOOGLE_RPC.google_rpc_RetryInfo as AnyCodec,
    arbitrary: partial({ retryDelay: fc.oneof(partial({ seconds: int64, nanos: int32 }), fc.constant(null)) }),
  },
};

describe.each(Object.keys(GOOGLE_MESSAGES))("%s", (name) => {
  const theirs = googleRpc[name] as protoLoader.MessageTypeDefinition<object, object>;
  agreesWithProtoLoader("message", GOOGLE_MESSAGES[name]!.ours, theirs, GOOGLE_MESSAGES[name]!.arbitrary);
});

it("decodes a map entry whose key is __proto__ as an own entry, as proto-loader does (fast-check found it lost)", () => {
  const theirs = googleRpc["google.rpc.ErrorInfo"] as protoLoader.MessageTypeDefinition<object, object>;
  const bytes = theirs.serialize({ reason: "r", metadata: JSON.parse('{"__proto__": "x", "a": "b"}') });
  const decoded = GOOGLE_RPC.google_rpc_ErrorInfo.decode(bytes);
  expect(decoded).toStrictEqual(theirs.deserialize(bytes));
  expect(Object.keys(decoded.metadata)).toEqual(["__proto__", "a"]);
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
