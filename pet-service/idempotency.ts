import { createHash } from "node:crypto";
import type { CreatePetResponse } from "../proto/generated/petstore-v1.ts";
import { idempotencyKeyReused } from "./grpc-errors.ts";
import { toProtoPet } from "./proto-mapping.ts";
import type { CheckedCreate } from "./rules.ts";
import type { NewPet, PetStore } from "./store/pet-store.ts";
import type { Clock } from "../lib/clock.ts";

/**
 * Idempotent CreatePet (CreatePetRequest.request_id, the HTTP Idempotency-Key): for 24 hours
 * after its first use, a request_id answers the same request with the pet it created, and
 * refuses any other request. The store makes check-and-create one transaction.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The fingerprint of a create: sha256 of the request after the business rules normalised it
 * (trimmed name, category id, effective status), so `" Rex"` and `"Rex"`, or an omitted status
 * and `available`, are the same request. Versioned, should the normalisation ever change.
 */
export function requestHash(pet: NewPet): string {
  const canonical = JSON.stringify(["CreatePet/1", pet.name, String(pet.categoryId), pet.status]);
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/** CreatePet after validation: a plain create without a request_id, else create-once under it. */
export async function createPet(store: PetStore, clock: Clock, { pet, requestId }: CheckedCreate): Promise<CreatePetResponse> {
  if (requestId === undefined) return { pet: toProtoPet(await store.create(pet)), replayed: false };
  const now = clock();
  const result = await store.createOnce(pet, { requestId, requestHash: requestHash(pet), now, expiredAt: now - IDEMPOTENCY_TTL_MS });
  if (result.outcome === "key_reused") throw idempotencyKeyReused(IDEMPOTENCY_TTL_MS / 3_600_000);
  return { pet: toProtoPet(result.pet), replayed: result.outcome === "replayed" };
}
