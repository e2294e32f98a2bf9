import type sqlite3 from "sqlite3";
import { allPrepared } from "./calls.ts";
import { inQuerySpan } from "../query-span.ts";
import type { CreateOnceResult, IdempotencyKey, Pet, PetStatus } from "../pet-store.ts";

/**
 * Idempotency keys of CreatePet (request_id) in the table `idempotency_keys` (sqlite-migrations.ts),
 * beside the pets in the same SQLite file, so a key and its pet are written in one transaction: a
 * crash never leaves one without the other.
 */

/** Expired keys deleted per create, at most: cleanup cost stays bounded, and it keeps up with any create rate. */
export const EXPIRED_KEYS_PER_CREATE = 100;

/**
 * int64 columns as decimal text (see sqlite-pet-store.ts). Prepared once on the writer
 * (SqlitePetStore.open): every create through the gateway carries a request_id, so these run
 * for nearly every create.
 */
export const IDEMPOTENCY_STATEMENTS = {
  expire: `DELETE FROM idempotency_keys WHERE rowid IN
             (SELECT rowid FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT ${EXPIRED_KEYS_PER_CREATE})`,
  find: `SELECT k.request_hash AS requestHash, CAST(pets.id AS TEXT) AS id, pets.name AS name,
                CAST(pets.category_id AS TEXT) AS categoryId, pets.status AS status
           FROM idempotency_keys AS k JOIN pets ON pets.id = k.pet_id
          WHERE k.request_id = ? AND k.created_at > ?`,
  // A row already there is an expired key (find saw no live one) beyond this call's cleanup batch:
  // the new create takes it over.
  remember: `INSERT INTO idempotency_keys (request_id, request_hash, pet_id, created_at) VALUES (?, ?, CAST(? AS INTEGER), ?)
             ON CONFLICT (request_id) DO UPDATE
               SET request_hash = excluded.request_hash, pet_id = excluded.pet_id, created_at = excluded.created_at`,
} as const;

export type IdempotencyStatements = Record<keyof typeof IDEMPOTENCY_STATEMENTS, sqlite3.Statement>;

interface FoundRow {
  requestHash: string;
  id: string;
  name: string;
  categoryId: string;
  status: PetStatus;
}

/**
 * The check-and-create of one idempotent create, with `statements` prepared on the writer, inside
 * a write transaction the caller has open (BEGIN IMMEDIATE: no other writer can slip between the
 * check and the insert) and commits: SqlitePetStore runs it in a savepoint of a group commit, so
 * the key and its pet are stored together or not at all, and nothing is acknowledged before the
 * COMMIT. The caller must run no other statement on the writer until it settles. `insertPet`
 * stores the pet.
 */
export async function createOnceInTransaction(
  statements: IdempotencyStatements,
  key: IdempotencyKey,
  insertPet: () => Promise<Pet>,
): Promise<CreateOnceResult> {
  await inQuerySpan("sqlite", { query: "expire_idempotency_keys", operation: "DELETE", table: "idempotency_keys" }, () =>
    allPrepared(statements.expire, [key.expiredAt]),
  );
  const [found] = await inQuerySpan("sqlite", { query: "find_idempotency_key", operation: "SELECT", table: "idempotency_keys" }, () =>
    allPrepared<FoundRow>(statements.find, [key.requestId, key.expiredAt]),
  );
  if (found) {
    const { requestHash, ...pet } = found;
    return requestHash === key.requestHash
      ? { outcome: "replayed", pet: { ...pet, id: BigInt(pet.id), categoryId: BigInt(pet.categoryId) } }
      : { outcome: "key_reused" };
  }
  const pet = await insertPet();
  await inQuerySpan("sqlite", { query: "remember_idempotency_key", operation: "INSERT", table: "idempotency_keys" }, () =>
    allPrepared(statements.remember, [key.requestId, key.requestHash, String(pet.id), key.now]),
  );
  return { outcome: "created", pet };
}
