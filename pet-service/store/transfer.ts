import type { Pet } from "./pet-store.ts";

/**
 * Moving a database from one store to another (`npm run pets-db -- copy`): every pet with its id,
 * every live idempotency key, the page-token secret, and the id sequence. Each store implements
 * both ends on connections of its own (sqlite-transfer.ts, postgres-transfer.ts); copyStore
 * drives them. The source is read in one snapshot, the target written in one transaction: a
 * failed copy leaves the target as it was.
 */

/** An idempotency key as stored: the request it names and the pet it created. */
export interface KeyRecord {
  requestId: string;
  requestHash: string;
  petId: bigint;
  /** ms since the epoch. */
  createdAt: number;
}

export interface TransferSource {
  /** Pets and keys created after `liveAfter` (ms) in the snapshot, for progress. */
  counts(liveAfter: number): Promise<{ pets: number; keys: number }>;
  /** Up to `limit` pets with an id above `afterId`, ascending. */
  pets(afterId: bigint, limit: number): Promise<Pet[]>;
  /** The keys created after `liveAfter` (ms), in batches of up to `batchSize`. */
  keys(liveAfter: number, batchSize: number): AsyncIterable<KeyRecord[]>;
  pageTokenSecret(): Promise<Buffer>;
  /** The highest id the store ever handed out (its sequence; at least the highest pet id), 0 when none. */
  lastIssuedId(): Promise<bigint>;
  /** Ends the snapshot and closes the connection. */
  close(): Promise<void>;
}

export interface TransferTarget {
  /** Pets stored, and whether any key is. */
  isEmpty(): Promise<boolean>;
  /** Deletes every pet and key (ids stay used: the sequence does not go back). */
  clear(): Promise<void>;
  insertPets(pets: Pet[]): Promise<void>;
  insertKeys(keys: KeyRecord[]): Promise<void>;
  setPageTokenSecret(secret: Buffer): Promise<void>;
  lastIssuedId(): Promise<bigint>;
  /** From now on, new ids are above `id` (never moves the sequence back). */
  moveIdsPast(id: bigint): Promise<void>;
  /** Commits everything written and closes the connection. */
  commit(): Promise<void>;
  /** Discards everything written and closes the connection. Idempotent. */
  rollback(): Promise<void>;
}

export interface CopyOptions {
  /** Copy into a target that holds pets or keys: they are deleted first. */
  replace?: boolean;
  /** Keys created at or before this instant (ms) have expired and are not copied. */
  liveAfter: number;
  /** Rows per batch read and written. */
  batchSize?: number;
  /** Called after each batch with what is copied so far. */
  progress?(done: { pets: number; keys: number }, total: { pets: number; keys: number }): void;
}

export interface CopyResult {
  pets: number;
  keys: number;
  /** New ids in the target start above this. */
  idsPast: bigint;
}

export class TargetNotEmptyError extends Error {
  constructor() {
    super("the target already holds pets or idempotency keys; copy into an empty database, or pass --replace to delete them first");
    this.name = "TargetNotEmptyError";
  }
}

const DEFAULT_BATCH = 1_000;

export async function copyStore(source: TransferSource, target: TransferTarget, options: CopyOptions): Promise<CopyResult> {
  const batch = options.batchSize ?? DEFAULT_BATCH;
  try {
    if (!(await target.isEmpty())) {
      if (!options.replace) throw new TargetNotEmptyError();
      await target.clear();
    }
    const total = await source.counts(options.liveAfter);
    const done = { pets: 0, keys: 0 };
    for (let afterId = 0n; ; ) {
      const pets = await source.pets(afterId, batch);
      if (pets.length === 0) break;
      await target.insertPets(pets);
      done.pets += pets.length;
      afterId = pets[pets.length - 1]!.id;
      options.progress?.(done, total);
    }
    for await (const keys of source.keys(options.liveAfter, batch)) {
      await target.insertKeys(keys);
      done.keys += keys.length;
      options.progress?.(done, total);
    }
    await target.setPageTokenSecret(await source.pageTokenSecret());
    // Past every id either side ever handed out: no id is ever given twice, not even one whose
    // create was rolled back (never acknowledged) or one the target used before --replace.
    const [sourceLast, targetLast] = [await source.lastIssuedId(), await target.lastIssuedId()];
    const idsPast = sourceLast > targetLast ? sourceLast : targetLast;
    await target.moveIdsPast(idsPast);
    await target.commit();
    return { ...done, idsPast };
  } catch (err) {
    await target.rollback();
    throw err;
  } finally {
    await source.close();
  }
}
