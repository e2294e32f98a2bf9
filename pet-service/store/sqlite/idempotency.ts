import type { StatementSync } from "node:sqlite";
import type { CreateOnceResult, IdempotencyKey, Pet, PetStatus } from "../pet-store.ts";
import type { StoreQuery } from "../query-span.ts";

/**
 * Idempotency keys of CreatePet (request_id) in the table `idempotency_keys` (migrations.ts),
 * beside the pets in the same SQLite file, so a key and its pet are written in one transaction: a
 * crash never leaves one without the other.
 */

/** Expired keys deleted per create, at most: cleanup cost stays bounded, and it keeps up with any create rate. */
export const EXPIRED_KEYS_PER_CREATE = 100;

/**
 * Prepared once on the writer connection (writer-worker.ts), which reads INTEGER columns as
 * bigint: every create through the gateway carries a request_id, so these run for nearly every create.
 */
export const IDEMPOTENCY_STATEMENTS = {
  expire: `DELETE FROM idempotency_keys WHERE rowid IN
             (SELECT rowid FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT ${EXPIRED_KEYS_PER_CREATE})`,
  find: `SELECT k.request_hash AS requestHash, pets.id AS id, pets.name AS name, pets.category_id AS categoryId, pets.status AS status
           FROM idempotency_keys AS k JOIN pets ON pets.id = k.pet_id
          WHERE k.request_id = ? AND k.created_at > ?`,
  // A row already there is an expired key (find saw no live one) beyond this call's cleanup batch:
  // the new create takes it over.
  remember: `INSERT INTO idempotency_keys (request_id, request_hash, pet_id, created_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (request_id) DO UPDATE
               SET request_hash = excluded.request_hash, pet_id = excluded.pet_id, created_at = excluded.created_at`,
} as const;

export type IdempotencyStatements = Record<keyof typeof IDEMPOTENCY_STATEMENTS, StatementSync>;

/** Runs one statement as the query `query`, recording when it ran (its span and timing, on the main thread). */
export type Timed = <T>(query: StoreQuery, run: () => T) => T;

interface FoundRow {
  requestHash: string;
  id: bigint;
  name: string;
  categoryId: bigint;
  status: PetStatus;
}

/**
 * The check-and-create of one idempotent create, inside a write transaction the caller has open
 * (BEGIN IMMEDIATE: no other writer can slip between the check and the insert) and commits: the
 * writer runs it in a savepoint of a group commit (commit-batch.ts), so the key and its pet are
 * stored together or not at all, and nothing is acknowledged before the COMMIT. `insertPet`
 * stores the pet.
 */
export function createOnceInTransaction(statements: IdempotencyStatements, key: IdempotencyKey, insertPet: () => Pet, timed: Timed): CreateOnceResult {
  timed("expire_idempotency_keys", () => statements.expire.run(key.expiredAt));
  const found = timed("find_idempotency_key", () => statements.find.get(key.requestId, key.expiredAt)) as FoundRow | undefined;
  if (found) {
    const { requestHash, id, name, categoryId, status } = found;
    return requestHash === key.requestHash ? { outcome: "replayed", pet: { id, name, categoryId, status } } : { outcome: "key_reused" };
  }
  const pet = insertPet();
  timed("remember_idempotency_key", () => statements.remember.run(key.requestId, key.requestHash, pet.id, key.now));
  return { outcome: "created", pet };
}
