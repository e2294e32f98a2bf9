import type { CreatePetRequestInit, Pet, PetStatus } from "../../proto/generated/petstore-v1.ts";
import { invalidRequest, type ErrorDetail } from "../../lib/http/errors.ts";
import { toInt64 } from "./int64.ts";
import { isJsonObject, isLosslessNumber } from "./json-body.ts";
import type { FieldViolation } from "../../lib/grpc-status-details.ts";

/**
 * JSON ↔ proto mapping of the public API. Only HTTP-level checks live here (JSON types, int64
 * range, enum spelling); the pet service owns the business rules (required, bounds, defaults).
 */
// Maps, not object literals: a client-sent "constructor" must not find Object.prototype's.
export const STATUS_TO_PROTO: ReadonlyMap<string, PetStatus> = new Map([
  ["available", "PET_STATUS_AVAILABLE"],
  ["pending", "PET_STATUS_PENDING"],
  ["sold", "PET_STATUS_SOLD"],
]);
const PROTO_TO_STATUS: ReadonlyMap<PetStatus | number, string> = new Map([...STATUS_TO_PROTO].map(([json, proto]) => [proto, json]));
export const STATUS_VALUES = [...STATUS_TO_PROTO.keys()];

/** Proto field names in the pet service's violations → the names an HTTP client sent. */
const HTTP_FIELD_NAMES: ReadonlyMap<string, string> = new Map([
  ["category_id", "categoryId"],
  ["id", "petId"],
  ["request_id", "Idempotency-Key"],
  ["page_token", "cursor"],
]);
const PROTO_FIELD = new RegExp(`\\b(${[...HTTP_FIELD_NAMES.keys()].join("|")})\\b`, "g");

/** Rewrites proto field names in a pet-service message into the public API's names. */
export const renameFields = (text: string): string => text.replace(PROTO_FIELD, (name) => HTTP_FIELD_NAMES.get(name) ?? name);

export function toHttpViolation(v: FieldViolation): ErrorDetail {
  return { field: HTTP_FIELD_NAMES.get(v.field) ?? v.field, message: renameFields(v.description) };
}

const NEW_PET_FIELDS = new Set(["name", "categoryId", "status"]);

/** At most this many unknown names are listed, each cut to MAX_ECHOED_NAME code points. */
const MAX_LISTED_UNKNOWN = 10;
const MAX_ECHOED_NAME = 64;

/**
 * Violations for names a client sent that the operation does not define (body fields, query
 * parameters). They echo client text, so the error stays small whatever the request held: the
 * first few names, shortened, then a count of the rest.
 */
export function unknownNameViolations(names: readonly string[], message: (name: string) => string): ErrorDetail[] {
  const shown = names.slice(0, MAX_LISTED_UNKNOWN).map((name) => {
    const codePoints = Array.from(name);
    const field = codePoints.length > MAX_ECHOED_NAME ? `${codePoints.slice(0, MAX_ECHOED_NAME).join("")}…` : name;
    return { field, message: message(name) };
  });
  const rest = names.length - shown.length;
  return rest > 0 ? [...shown, { field: "…", message: `and ${rest} more not listed` }] : shown;
}

const DIGITS = /^-?[0-9]+$/;

/**
 * Serialises a Pet with its int64 fields written as exact JSON numbers. The values come from
 * the pet service as decimal strings; anything else there is a bug, not client input.
 */
export function petJson(pet: Pet): string {
  if (!DIGITS.test(pet.id) || !DIGITS.test(pet.categoryId)) throw new Error("pet service returned a non-integer id");
  const status = PROTO_TO_STATUS.get(pet.status);
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${
    status ? `,"status":"${status}"` : ""
  }}`;
}

export function petsJson(pets: readonly Pet[]): string {
  return `[${pets.map(petJson).join(",")}]`;
}

/** Checks a parsed NewPet body's JSON types and maps it to CreatePetRequestInit; 400 lists every problem. */
export function toCreatePetRequest(body: unknown): CreatePetRequestInit {
  if (!isJsonObject(body)) throw invalidRequest([{ field: "body", message: "must be a JSON object (NewPet)" }]);
  const violations: ErrorDetail[] = [];
  violations.push(
    ...unknownNameViolations(
      Object.keys(body).filter((field) => !NEW_PET_FIELDS.has(field)),
      (field) => (field === "id" ? "is assigned by the service; do not send it" : "is not a NewPet field"),
    ),
  );
  const request: CreatePetRequestInit = {};

  if (typeof body.name === "string") {
    if (body.name.isWellFormed()) request.name = body.name;
    else violations.push({ field: "name", message: "must be valid Unicode (no lone surrogates)" });
  } else if (body.name !== undefined) violations.push({ field: "name", message: "must be a string" });

  const categoryId = body.categoryId;
  if (isLosslessNumber(categoryId)) {
    const value = toInt64(categoryId.value);
    if (value === undefined) violations.push({ field: "categoryId", message: "must be an integer" });
    else if (value === "out_of_range") violations.push({ field: "categoryId", message: "must fit in int64" });
    else request.categoryId = value;
  } else if (categoryId !== undefined) {
    violations.push({ field: "categoryId", message: "must be an integer" });
  }

  const status = typeof body.status === "string" ? STATUS_TO_PROTO.get(body.status) : undefined;
  if (status) request.status = status;
  else if (body.status !== undefined && body.status !== null) {
    violations.push({ field: "status", message: `must be one of ${STATUS_VALUES.join(", ")}` });
  }

  if (violations.length) throw invalidRequest(violations);
  return request;
}
