import type { DatabaseSync, StatementSync } from "node:sqlite";
import { withResultCode } from "../../../lib/sqlite.ts";
import { wireError, type WireError } from "../../../lib/worker-calls.ts";
import type { CreateOnceResult, IdempotencyKey, NewPet, Pet } from "../pet-store.ts";
import type { StoreQuery } from "../query-span.ts";
import { createOnceInTransaction, IDEMPOTENCY_STATEMENTS, type IdempotencyStatements, type Timed } from "./idempotency.ts";

/**
 * One group commit on the writer connection, in the writer's worker thread (writer-worker.ts):
 * BEGIN IMMEDIATE, each create in a savepoint of its own, one COMMIT (one fsync for all of them).
 * A create that fails is rolled back to its savepoint and fails alone; the others commit. The
 * main thread (group-commit.ts) acknowledges nothing before this returns with the COMMIT done.
 */

/** A create as the main thread sends it: an idempotent one carries its key. */
export interface WriteRequest {
  pet: NewPet;
  key?: IdempotencyKey;
}

/** When a statement ran (ms since the epoch): the main thread makes its span and times it from this. */
export interface QueryTiming {
  query: StoreQuery;
  start: number;
  end: number;
  failed?: true;
}

export type WriteOutcome =
  | { ok: true; value: Pet | CreateOnceResult; queries: QueryTiming[] }
  | { ok: false; error: WireError; queries: QueryTiming[] };

export type BatchResult =
  /** Every outcome stands: the successful ones are durable. */
  | { committed: true; outcomes: WriteOutcome[]; endedAt: number }
  /** Nothing of the batch was stored: `error` is why, except for a create that had failed on its own before (its outcome). */
  | { committed: false; error: WireError; outcomes: WriteOutcome[]; endedAt: number };

/** The returned row of an insert: INTEGER columns as bigint (the writer reads them so). */
const RETURNED = "id, name, category_id AS categoryId, status";
export const INSERT_PET = `INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING ${RETURNED}`;

export type WriteStatements = ReturnType<typeof prepareWrites>;

export function prepareWrites(db: DatabaseSync) {
  const prepare = (sql: string): StatementSync => db.prepare(sql);
  return {
    begin: prepare("BEGIN IMMEDIATE"),
    savepoint: prepare("SAVEPOINT pet_write"),
    release: prepare("RELEASE pet_write"),
    rollbackTo: prepare("ROLLBACK TO pet_write"),
    commit: prepare("COMMIT"),
    insert: prepare(INSERT_PET),
    idempotency: Object.fromEntries(Object.entries(IDEMPOTENCY_STATEMENTS).map(([key, sql]) => [key, prepare(sql)])) as IdempotencyStatements,
  };
}

const now = () => performance.timeOrigin + performance.now();
const wire = (error: unknown) => wireError(withResultCode(error));

export function commitBatch(db: DatabaseSync, statements: WriteStatements, writes: WriteRequest[]): BatchResult {
  const outcomes: WriteOutcome[] = [];
  /** Set when the transaction as a whole is lost: then nothing of the batch was committed. */
  let lost: { error: unknown } | undefined;
  try {
    statements.begin.run();
  } catch (error) {
    return { committed: false, error: wire(error), outcomes, endedAt: now() };
  }
  for (const write of writes) {
    try {
      statements.savepoint.run();
    } catch (error) {
      lost = { error };
      break;
    }
    const queries: QueryTiming[] = [];
    try {
      const value = runWrite(statements, write, timer(queries));
      statements.release.run();
      outcomes.push({ ok: true, value, queries });
    } catch (error) {
      outcomes.push({ ok: false, error: wire(error), queries });
      try {
        statements.rollbackTo.run();
        statements.release.run();
      } catch {
        // SQLite ended the whole transaction because of `error` (I/O error, disk full, …): no
        // savepoint to go back to, and `error` is why every write of the batch failed.
        lost = { error };
        break;
      }
    }
  }
  if (!lost) {
    try {
      statements.commit.run();
    } catch (error) {
      lost = { error };
    }
  }
  if (lost) {
    // A failed COMMIT may already have ended the transaction; a ROLLBACK that fails too (the
    // file system gone) leaves SQLite to roll back on the next open: either way nothing was stored.
    try {
      if (db.isTransaction) db.exec("ROLLBACK");
    } catch {
      // See above.
    }
    return { committed: false, error: wire(lost.error), outcomes, endedAt: now() };
  }
  return { committed: true, outcomes, endedAt: now() };
}

function runWrite(statements: WriteStatements, { pet, key }: WriteRequest, timed: Timed): Pet | CreateOnceResult {
  const insert = () => timed("insert_pet", () => statements.insert.get(pet.name, pet.categoryId, pet.status)) as unknown as Pet;
  return key ? createOnceInTransaction(statements.idempotency, key, insert, timed) : insert();
}

function timer(queries: QueryTiming[]): Timed {
  return (query, run) => {
    const start = now();
    try {
      const value = run();
      queries.push({ query, start, end: now() });
      return value;
    } catch (err) {
      queries.push({ query, start, end: now(), failed: true });
      throw err;
    }
  };
}
