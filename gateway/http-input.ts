import type { Request } from "express";
import type { GetPetRequest, ListPetsRequest } from "../proto/types.js";
import { ApiError, invalidRequest, type FieldViolation } from "./errors.js";
import { toInt64 } from "./int64.js";
import { parseJsonBody } from "./json-body.js";
import { STATUS_TO_PROTO, STATUS_VALUES } from "./pet-mapping.js";

/** A query parameter given at most once; repeats are ambiguous, so they are refused. */
function single(query: Request["query"], name: string, violations: FieldViolation[]): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === "string") return value;
  violations.push({ field: name, message: "must be given once" });
  return undefined;
}

const LIMIT = /^[0-9]{1,3}$/;

/** GET /v1/pets query: `limit` an integer 1..100 (default left to the pet service), `status` an enum value. */
export function listPetsRequest(req: Request): ListPetsRequest {
  const violations: FieldViolation[] = [];
  const request: ListPetsRequest = {};
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
  if (violations.length) throw invalidRequest(violations);
  return request;
}

/** GET /v1/pets/{petId}: petId an int64. */
export function getPetRequest(req: Request): GetPetRequest {
  const id = toInt64(String(req.params.petId));
  if (id === undefined || id === "out_of_range") throw invalidRequest([{ field: "petId", message: "must be an int64 integer" }]);
  return { id };
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The JSON body of a request read by express.raw: required, `application/json`, valid UTF-8,
 * valid JSON. Decoded here rather than by express.json because JSON.parse rounds int64 values
 * and silently replaces invalid UTF-8.
 */
export function jsonBody(req: Request): unknown {
  const raw = req.body as Buffer | undefined;
  if (!Buffer.isBuffer(raw) || raw.length === 0) {
    throw invalidRequest([{ field: "body", message: "is required (application/json)" }]);
  }
  if (!req.is(["application/json", "+json"])) throw new ApiError("unsupported_media_type");
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid UTF-8.");
  }
  return parseJsonBody(text);
}
