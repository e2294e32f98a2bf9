/** TypeScript shapes of proto/petstore/v1/pet_service.proto as loaded with LOADER_OPTIONS. */

export const PET_STATUSES = ["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"] as const;
export type PetStatusName = "PET_STATUS_UNSPECIFIED" | (typeof PET_STATUSES)[number];

/** int64 fields travel as decimal strings so no value above 2^53 is rounded. */
export interface Pet {
  id: string;
  name: string;
  categoryId: string;
  status: PetStatusName;
}

export interface ListPetsRequest {
  limit?: number;
  status?: PetStatusName;
  /** The previous response's nextPageToken; "" (or absent) for the first page. */
  pageToken?: string;
}
export interface ListPetsResponse {
  pets: Pet[];
  /** "" on the last page. */
  nextPageToken: string;
}
export interface CreatePetRequest {
  name?: string;
  categoryId?: string;
  status?: PetStatusName;
  /** Idempotency key; "" (or absent) means none. */
  requestId?: string;
}
export interface CreatePetResponse {
  pet: Pet;
  /** True when the pet was created by an earlier call with the same requestId. */
  replayed: boolean;
}
export interface GetPetRequest {
  id?: string;
}
export interface GetPetResponse {
  pet: Pet;
}
