import type { Pet as ProtoPet, PetStatus as ProtoPetStatus } from "../proto/generated/petstore-v1.ts";
import type { Pet, PetStatus } from "./store/pet-store.ts";

const TO_PROTO: Readonly<Record<PetStatus, ProtoPetStatus>> = {
  available: "PET_STATUS_AVAILABLE",
  pending: "PET_STATUS_PENDING",
  sold: "PET_STATUS_SOLD",
};
const FROM_PROTO = new Map<unknown, PetStatus>(
  Object.entries(TO_PROTO).map(([domain, proto]) => [proto, domain as PetStatus]),
);

/** The domain status for a proto enum name; undefined for UNSPECIFIED and for values outside the enum. */
export function statusFromProto(value: unknown): PetStatus | undefined {
  return FROM_PROTO.get(value);
}

export function toProtoPet(pet: Pet): ProtoPet {
  return { id: String(pet.id), name: pet.name, categoryId: String(pet.categoryId), status: TO_PROTO[pet.status] };
}
