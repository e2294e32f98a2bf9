/**
 * The pet service's storage contract and its domain types. int64 values are bigints so ids and
 * category ids stay exact over the whole int64 range; the gRPC layer maps them to proto shapes.
 */
export const PET_STATUSES = ["available", "pending", "sold"] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

/** A pet that passed every business rule and has no id yet. */
export interface NewPet {
  name: string;
  categoryId: bigint;
  status: PetStatus;
}

export interface Pet extends NewPet {
  id: bigint;
}

export interface ListQuery {
  limit: number;
  /** Only pets with this status; every status when absent. */
  status?: PetStatus;
}

export interface PetStore {
  /** Stores the pet under a new id (unique, increasing, never reused); resolves once it is durable. */
  create(pet: NewPet): Promise<Pet>;
  /** The first `limit` pets in ascending id order. */
  list(query: ListQuery): Promise<Pet[]>;
  get(id: bigint): Promise<Pet | undefined>;
  /** Lets pending operations finish, then releases the storage. Idempotent. */
  close(): Promise<void>;
}
