import type { SchemaReport } from "../../lib/migrations.ts";

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

/** A pet as both stores' queries return it: int64 columns as decimal text (exact; JS numbers are not). */
export interface PetRow {
  id: string;
  name: string;
  categoryId: string;
  status: PetStatus;
}

export function petOfRow(row: PetRow): Pet {
  return { id: BigInt(row.id), name: row.name, categoryId: BigInt(row.categoryId), status: row.status };
}

export interface ListQuery {
  limit: number;
  /** Only pets with this status; every status when absent. */
  status?: PetStatus;
  /** Only pets with a greater id (keyset paging: where the previous page ended); from the first pet when absent. */
  afterId?: bigint;
}

/** The idempotency key of a create (CreatePetRequest.request_id) and what to check it against. */
export interface IdempotencyKey {
  requestId: string;
  /** Fingerprint of the normalized request: the same key with another fingerprint is refused. */
  requestHash: string;
  /** This call's instant (ms since the epoch), stored as the key's creation time. */
  now: number;
  /** Keys created at or before this instant (ms) have expired: ignored, and deleted lazily. */
  expiredAt: number;
}

export type CreateOnceResult =
  /** A new pet, stored together with its key. */
  | { outcome: "created"; pet: Pet }
  /** The live key already named this request: its pet, and nothing stored. */
  | { outcome: "replayed"; pet: Pet }
  /** The live key was first used for a request with another fingerprint: nothing stored. */
  | { outcome: "key_reused" };

/** Every method may reject with StorageUnavailableError (see above). */
export interface PetStore {
  /** Stores the pet under a new id (unique, increasing, never reused); resolves once it is durable. */
  create(pet: NewPet): Promise<Pet>;
  /**
   * create() under an idempotency key, as one transaction: the pet and its key are stored
   * together or not at all, and concurrent calls with one key store one pet.
   */
  createOnce(pet: NewPet, key: IdempotencyKey): Promise<CreateOnceResult>;
  /**
   * The first `limit` pets in ascending id order with an id above `afterId` (and the status, when
   * given). An index must serve it in that order, without a sort or an OFFSET, so every page costs
   * the same however deep it is.
   */
  list(query: ListQuery): Promise<Pet[]>;
  /**
   * A random secret (at least 16 bytes) created with the database and kept in it: ListPets signs
   * its page tokens with it, so every replica on one database, and every restart, accepts them.
   */
  readonly pageTokenSecret: Buffer;
  get(id: bigint): Promise<Pet | undefined>;
  /**
   * One cheap round trip to the database; rejects with StorageUnavailableError (`unreachable`) while it cannot be
   * reached. The pet service's health follows it (pet-service/storage-health.ts).
   */
  ping(): Promise<void>;
  /** The schema version the database is at, and what opening it applied (logged at start). */
  readonly schema: SchemaReport;
  /** Lets pending operations finish, then releases the storage. Idempotent. */
  close(): Promise<void>;
}
