import type { Request } from "express";
import type { GetPetRequestInit, ListPetsRequestInit } from "../../proto/generated/petstore-v1.ts";
import { ApiError, invalidRequest, type ErrorDetail } from "../../lib/http/errors.ts";
import { toInt64 } from "./int64.ts";
import { parseJsonBody } from "./json-body.ts";
import { STATUS_TO_PROTO, STATUS_VALUES, unknownNameViolations } from "./pet-mapping.ts";

/** A query parameter given at most once; repeats are ambiguous, so they are refused. */
function single(query: Request["query"], name: string, violations: ErrorDetail[]): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === "string") return value;
  violations.push({ field: name, message: "must be given once" });
  return undefined;
}

/**
 * Query parameters the operation does not define are refused, not ignored: `?status[]=sold` or
 * `?Status=sold` silently dropping the filter would answer a different question than was asked.
 */
function onlyKnown(query: Request["query"], known: readonly string[], violations: ErrorDetail[]): void {
  const unknown = Object.keys(query).filter((name) => !known.includes(name));
  violations.push(...unknownNameViolations(unknown, () => "is not a parameter of this operation"));
}

const LIMIT = /^[0-9]{1,3}$/;
const LIST_PETS_PARAMETERS = ["limit", "status", "cursor"];
/** Far above a real cursor's length (35); bounds what is passed on before the pet service judges it. */
const CURSOR_MAX_LENGTH = 256;

/**
 * GET /v1/pets query: `limit` an integer 1..100 (default left to the pet service), `status` an
 * enum value, `cursor` an opaque page token (the pet service checks it: malformed, forged or
 * cross-filter cursors come back as violations of page_token, shown to the client as `cursor`).
 */
export function listPetsRequest(req: Request): ListPetsRequestInit {
  const violations: ErrorDetail[] = [];
  onlyKnown(req.query, LIST_PETS_PARAMETERS, violations);
  const request: ListPetsRequestInit = {};
  const limit = single(req.query, "limit", violations);
  if (limit !== undefined) {
    const n = LIMIT.test(limit) ? Number(limit) : NaN;
    if (n >= 1 && n <= 100) request.limit = n;
    else violations.push({ field: "limit", message: "must be an integer from 1 to 100" });
  }
  const status = single(req.query, "status", violations);
  if (status !== undefined) {
    const proto = STATUS_TO_PROTO.get(status);
    if (proto) request.status = proto;
    else violations.push({ field: "status", message: `must be one of ${STATUS_VALUES.join(", ")}` });
  }
  const cursor = single(req.query, "cursor", violations);
  if (cursor !== undefined) {
    if (cursor === "") violations.push({ field: "cursor", message: "must not be empty; omit it for the first page" });
    else if (cursor.length > CURSOR_MAX_LENGTH) violations.push({ field: "cursor", message: "is malformed: send it exactly as the previous page gave it" });
    else request.pageToken = cursor;
  }
  if (violations.length) throw invalidRequest(violations);
  return request;
}

/** GET /v1/pets/{petId}: petId an int64. */
export function getPetRequest(req: Request): GetPetRequestInit {
  const violations: ErrorDetail[] = [];
  const id = toInt64(String(req.params.petId));
  if (id === undefined || id === "out_of_range") violations.push({ field: "petId", message: "must be an int64 integer" });
  onlyKnown(req.query, [], violations);
  if (id === undefined || id === "out_of_range" || violations.length) throw invalidRequest(violations);
  return { id };
}

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** RFC 9651 sf-string: DQUOTE *( %x20-21 / %x23-5B / %x5D-7E / "\" ( DQUOTE / "\" ) ) DQUOTE. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * The `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header), undefined
 * when absent. The draft makes it an sf-string, `Idempotency-Key: "8e03978e-40d5"`; many
 * clients send the bare value, `Idempotency-Key: 8e03978e-40d5`, so that is accepted too and
 * means the same key. Given once, 1..255 printable ASCII characters; the pet service owns what
 * a key means.
 */
export function idempotencyKey(req: Request): string | undefined {
  const values = req.headersDistinct[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
  if (values === undefined) return undefined;
  const refuse = (message: string) => invalidRequest([{ field: IDEMPOTENCY_KEY_HEADER, message }]);
  if (values.length !== 1) throw refuse("must be given once");
  const raw = values[0]!;
  let key: string = raw;
  if (raw.startsWith('"')) {
    const quoted = SF_STRING.exec(raw);
    if (!quoted) throw refuse('must be a quoted string ("...", RFC 9651) or a bare printable ASCII value');
    key = quoted[1]!.replace(/\\(["\\])/g, "$1");
  }
  if (key === "") throw refuse("must not be empty");
  if (!PRINTABLE_ASCII.test(key)) throw refuse("must be printable ASCII");
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) throw refuse(`Idempotency-Key must be at most ${IDEMPOTENCY_KEY_MAX_LENGTH} characters (got ${key.length})`);
  return key;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

// RFC 9110 §8.3.1: media-type = type "/" subtype parameters; parameters = *( OWS ";" OWS [ parameter ] ).
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x20-\\x7e\\x80-\\xff])*"';
// Each run of whitespace has one reading (before a ";", before a parameter, or at the end), so
// a hostile header cannot make the match backtrack.
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}((?:[ \\t]*;(?:[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED_STRING}))?)*)[ \\t]*$`);
const PARAMETER = new RegExp(`(${TOKEN})=(${TOKEN}|${QUOTED_STRING})`, "g");

/**
 * The parameters of a well-formed Content-Type (names lower-cased, quoted values unquoted), or
 * undefined when the header does not follow the media-type grammar.
 */
function mediaTypeParameters(header: string): Map<string, string> | undefined {
  const match = MEDIA_TYPE.exec(header);
  if (!match) return undefined;
  const parameters = new Map<string, string>();
  for (const [, name, value] of match[1]!.matchAll(PARAMETER)) {
    parameters.set(name!.toLowerCase(), value!.startsWith('"') ? value!.slice(1, -1).replace(/\\(.)/g, "$1") : value!);
  }
  return parameters;
}

const UTF8 = /^utf-?8$/i;

/**
 * The JSON body of a request read by express.raw: required, `application/json` (or `+json`)
 * with no charset but UTF-8 (RFC 8259 §8.1: JSON is UTF-8; a body declared as latin1 or UTF-16
 * would be misread, so it is refused with 415 rather than guessed at), valid UTF-8 (a leading
 * BOM is ignored), valid JSON. Decoded here rather than by express.json because JSON.parse
 * rounds int64 values and silently replaces invalid UTF-8.
 */
export function jsonBody(req: Request): unknown {
  const raw = req.body as Buffer | undefined;
  if (!Buffer.isBuffer(raw) || raw.length === 0) {
    throw invalidRequest([{ field: "body", message: "is required (application/json)" }]);
  }
  const parameters = mediaTypeParameters(req.get("content-type") ?? "");
  if (!parameters || !req.is(["application/json", "+json"])) throw new ApiError("unsupported_media_type");
  const charset = parameters.get("charset");
  if (charset !== undefined && !UTF8.test(charset)) {
    throw new ApiError("unsupported_media_type", "The request body must be application/json in UTF-8 (charset=utf-8, or no charset).");
  }
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid UTF-8.");
  }
  return parseJsonBody(text);
}
