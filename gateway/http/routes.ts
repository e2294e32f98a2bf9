import { randomUUID } from "node:crypto";
import type { Request } from "express";
import type { PetClient } from "../pet-client/pet-client.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { GET_PET_DEPRECATION, type Deprecation } from "./deprecation.ts";
import { getPetRequest, idempotencyKey, jsonBody, listPetsRequest } from "./input.ts";
import { petJson, petsJson, toCreatePetRequest } from "./pet-mapping.ts";
import type { Clock } from "../../lib/clock.ts";

export interface RouteContext {
  pets: PetClient;
  clock: Clock;
  requestId: string;
  /** The verified API key's id (every /v1 operation runs behind auth). */
  keyId: string;
}

export interface RouteResult {
  status: number;
  /** Pre-serialised JSON: int64 values are written exactly, never through a JS number. */
  body: string;
  headers?: Record<string, string>;
}

/**
 * One row per public operation: HTTP method and path (under /v1), the RPC behind it, its
 * deprecation. Method, path, RPC and body agree with the HTTP binding, proto/petstore/v1/http.yaml
 * (tests/unit/proto/http-binding.test.ts).
 */
export interface Route {
  /** The OpenAPI operationId. */
  operation: string;
  method: "GET" | "POST";
  /** Express form; a path parameter keeps its public (OpenAPI) name. */
  path: string;
  /** The petstore.v1.PetService method the binding maps this route to. */
  rpc: string;
  /** Path parameter → the request field it fills (the binding's `{field}`). */
  pathFields?: Readonly<Record<string, string>>;
  /** The JSON body is the whole request message (the binding's `body: "*"`). */
  hasBody?: boolean;
  deprecation?: Deprecation;
  handle(req: Request, ctx: RouteContext): Promise<RouteResult>;
}

/**
 * The request_id of a create sent without Idempotency-Key: outside the `<api key id>:` space of
 * clients' keys ("@" is no key id character), random, so it names this one HTTP request only.
 */
export const GENERATED_REQUEST_ID_PREFIX = "@gateway:";

/** On a createPet answered from an earlier request with the same Idempotency-Key (a common convention). */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/** The same list with only the cursor new: the client's own limit and status, as it sent them. */
function nextPageUrl(req: Request, cursor: string): string {
  const query = new URLSearchParams();
  for (const name of ["limit", "status"]) {
    const value = req.query[name];
    if (typeof value === "string") query.set(name, value);
  }
  query.set("cursor", cursor);
  return `/v1/pets?${query}`;
}

export const ROUTES: readonly Route[] = [
  {
    operation: "listPets",
    method: "GET",
    path: "/pets",
    rpc: "ListPets",
    async handle(req, ctx) {
      const request = listPetsRequest(req);
      const { pets, nextPageToken } = await ctx.pets.listPets(request, ctx);
      // RFC 8288: the next page, when more pets may follow; the last page has none.
      const headers = nextPageToken ? { Link: `<${nextPageUrl(req, nextPageToken)}>; rel="next"` } : undefined;
      return { status: 200, body: petsJson(pets), ...(headers && { headers }) };
    },
  },
  {
    operation: "createPet",
    method: "POST",
    path: "/pets",
    rpc: "CreatePet",
    hasBody: true,
    async handle(req, ctx) {
      const key = idempotencyKey(req);
      const request = toCreatePetRequest(jsonBody(req));
      // Every create carries a request_id, so the gateway's retry of it on another replica can
      // never add the animal twice: the client's key scoped to its API key (two clients that pick
      // the same key never see each other's pets), or else one made here for this request alone.
      request.requestId = key === undefined ? `${GENERATED_REQUEST_ID_PREFIX}${randomUUID()}` : `${ctx.keyId}:${key}`;
      const { pet, replayed } = await ctx.pets.createPet(request, ctx);
      if (!pet) throw new Error("the pet service answered CreatePet without a pet");
      // A retry under the client's Idempotency-Key gets the original 201 again, marked as a replay;
      // a replay of the gateway's own retry is the first answer the client sees.
      const headers: Record<string, string> = { Location: `/v1/pets/${pet.id}` };
      if (replayed && key !== undefined) headers[IDEMPOTENT_REPLAYED_HEADER] = "true";
      return { status: 201, body: petJson(pet), headers };
    },
  },
  {
    operation: "getPet",
    method: "GET",
    path: "/pets/:petId",
    rpc: "GetPet",
    pathFields: { petId: "id" },
    deprecation: GET_PET_DEPRECATION,
    async handle(req, ctx) {
      if (ctx.clock() >= GET_PET_DEPRECATION.sunsetAt) {
        throw new ApiError("gone", "GET /v1/pets/{petId} was removed on 2030-12-05; use GET /v1/pets?status=...");
      }
      const { pet } = await ctx.pets.getPet(getPetRequest(req), ctx);
      if (!pet) throw new Error("the pet service answered GetPet without a pet");
      return { status: 200, body: petJson(pet) };
    },
  },
];
