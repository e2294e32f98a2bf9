import {
  PetStatusValues,
  type CreatePetRequestInit,
  type GetPetRequestInit,
  type ListPetsRequestInit,
} from "../proto/generated/petstore-v1.ts";
import type { PageTokens, TokenProblem } from "./page-token.ts";
import { statusFromProto } from "./proto-mapping.ts";
import type { ListQuery, NewPet, PetStatus } from "./store/pet-store.ts";
import { INT64_MAX, isInt64 } from "../lib/int64.ts";
import type { FieldViolation } from "../lib/grpc-status-details.ts";

/**
 * Every business rule of the pet service. Field names are the proto field names (snake_case),
 * as google.rpc.BadRequest expects; each description names its field so the joined message
 * alone tells a caller what to fix.
 */

/** Names are counted in Unicode code points, after trimming. */
export const NAME_MAX_LENGTH = 100;
export const LIST_LIMIT = { min: 1, max: 100, default: 20 } as const;
/**
 * CreatePet's request_id (idempotency key): printable ASCII, as sf-strings allow. 320 leaves room
 * for the gateway's `<api key id>:` scope in front of a client's 255-character Idempotency-Key.
 */
export const CREATE_REQUEST_ID_MAX_LENGTH = 320;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** C0 and C1 control characters, DEL included: invisible, and they break logs and terminals. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;

export type Checked<T> = { ok: true; value: T } | { ok: false; violations: FieldViolation[] };

export function checkNewPet(request: CreatePetRequestInit): Checked<NewPet> {
  const name = parseName(request.name);
  const categoryId = parsePositiveInt64("category_id", request.categoryId);
  const status = parseStatus(request.status) ?? "available";
  if (isViolation(name) || isViolation(categoryId) || isViolation(status)) return rejected(name, categoryId, status);
  return { ok: true, value: { name, categoryId, status } };
}

/** A create and its optional idempotency key (absent when request_id is empty). */
export interface CheckedCreate {
  pet: NewPet;
  requestId?: string;
}

/** checkNewPet plus request_id, every violation reported at once. */
export function checkCreatePet(request: CreatePetRequestInit): Checked<CheckedCreate> {
  const pet = checkNewPet(request);
  const requestId = parseRequestId(request.requestId);
  const violations = [...(pet.ok ? [] : pet.violations), ...(isViolation(requestId) ? [requestId] : [])];
  if (!pet.ok || isViolation(requestId)) return { ok: false, violations };
  return { ok: true, value: requestId === undefined ? { pet: pet.value } : { pet: pet.value, requestId } };
}

/** A ListPets request: its page size, filter and (after the first page) where the page starts. */
export function checkListQuery(request: ListPetsRequestInit, tokens: PageTokens): Checked<ListQuery> {
  const limit = parseLimit(request.limit);
  const status = parseStatus(request.status);
  if (isViolation(limit) || isViolation(status)) return rejected(limit, status);
  const query: ListQuery = status ? { limit, status } : { limit };
  const token = request.pageToken ?? "";
  if (token === "") return { ok: true, value: query };
  const position = tokens.decode(token, status);
  if ("problem" in position) return rejected(violation("page_token", PAGE_TOKEN_PROBLEMS[position.problem]));
  return { ok: true, value: { ...query, afterId: position.afterId } };
}

const PAGE_TOKEN_PROBLEMS: Readonly<Record<TokenProblem, string>> = {
  malformed: "page_token is malformed: send it exactly as the previous page gave it",
  not_issued: "page_token was not issued by this service (altered or forged): send it exactly as the previous page gave it",
  other_filter: "page_token was issued for another status filter: keep the status of the first page for the whole walk",
};

/**
 * GetPet's id: required, any int64. Ids the service assigns are positive, so 0 and negative ids
 * are well-formed ids that name no pet (NOT_FOUND), like any id never assigned; see namesNoPet.
 */
export function checkPetId(request: GetPetRequestInit): Checked<bigint> {
  const id = parseInt64("id", request.id);
  if (isViolation(id)) return rejected(id);
  return { ok: true, value: id };
}

/** True for ids the service never assigns (0 and below): no store needs asking about them. */
export const namesNoPet = (id: bigint): boolean => id <= 0n;

function parseName(raw: unknown): string | FieldViolation {
  const name = typeof raw === "string" ? raw.trim() : "";
  if (name === "") return violation("name", "name is required");
  const length = [...name].length;
  if (length > NAME_MAX_LENGTH) {
    return violation("name", `name must be at most ${NAME_MAX_LENGTH} characters (got ${length})`);
  }
  if (CONTROL_CHARACTER.test(name)) return violation("name", "name must not contain control characters");
  return name;
}

/**
 * A required int64 field. These fields have explicit presence (`optional` in the proto), so an
 * unset field (undefined here) is told apart from one set to 0. int64 arrives as a decimal
 * string (proto-loader `longs: String`).
 */
function parseInt64(field: string, raw: unknown): bigint | FieldViolation {
  if (raw === undefined || raw === null) return violation(field, `${field} is required`);
  const text = String(raw);
  if (!/^-?\d+$/.test(text)) return violation(field, `${field} must be an integer`);
  const value = BigInt(text);
  if (!isInt64(value)) return violation(field, `${field} must be an int64`);
  return value;
}

function parsePositiveInt64(field: string, raw: unknown): bigint | FieldViolation {
  const value = parseInt64(field, raw);
  if (isViolation(value) || value > 0n) return value;
  return violation(field, `${field} must be a positive integer, 1 to ${INT64_MAX} (got ${value})`);
}

/** "" (proto3's "not set") means none. Taken verbatim: an opaque key, not trimmed. */
function parseRequestId(raw: unknown): string | undefined | FieldViolation {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string") return violation("request_id", "request_id must be a string");
  const length = [...raw].length;
  if (length > CREATE_REQUEST_ID_MAX_LENGTH) {
    return violation("request_id", `request_id must be at most ${CREATE_REQUEST_ID_MAX_LENGTH} characters (got ${length})`);
  }
  if (!PRINTABLE_ASCII.test(raw)) return violation("request_id", "request_id must be printable ASCII (0x20 to 0x7E)");
  return raw;
}

/** 0 (proto3's "not set") means the default. */
function parseLimit(raw: unknown): number | FieldViolation {
  const limit = raw ?? 0;
  if (limit === 0) return LIST_LIMIT.default;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < LIST_LIMIT.min || limit > LIST_LIMIT.max) {
    return violation("limit", `limit must be between ${LIST_LIMIT.min} and ${LIST_LIMIT.max} (got ${String(limit)})`);
  }
  return limit;
}

/** The statuses a request may name (every PetStatus but UNSPECIFIED, which means "none"). */
const PROTO_STATUSES = Object.keys(PetStatusValues).filter((name) => name !== "PET_STATUS_UNSPECIFIED");

/** undefined for PET_STATUS_UNSPECIFIED; numbers outside the enum arrive as numbers and are refused. */
function parseStatus(raw: unknown): PetStatus | undefined | FieldViolation {
  if (raw === undefined || raw === "PET_STATUS_UNSPECIFIED") return undefined;
  return (
    statusFromProto(raw) ??
    violation("status", `status must be one of ${PROTO_STATUSES.join(", ")} (got ${JSON.stringify(raw)})`)
  );
}

function violation(field: string, description: string): FieldViolation {
  return { field, description };
}

function isViolation(value: unknown): value is FieldViolation {
  return typeof value === "object" && value !== null;
}

function rejected(...parsed: unknown[]): Checked<never> {
  return { ok: false, violations: parsed.filter(isViolation) };
}
