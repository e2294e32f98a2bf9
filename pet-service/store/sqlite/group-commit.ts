import type sqlite3 from "sqlite3";
import { run } from "./calls.ts";
import { toStorageError } from "./faults.ts";

/** Creates committed together in one transaction, at most (bounds a transaction's length). */
export const MAX_WRITES_PER_COMMIT = 256;

/** A create waiting for the next group commit. */
interface PendingWrite {
  /** Its statements, run inside the batch's transaction (in a savepoint of its own). */
  work(): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Group-commit counters, for tests and operators. */
export interface CommitStats {
  /** Transactions committed. */
  commits: number;
  /** Creates acknowledged after those commits (replays and refused keys included). */
  writes: number;
}

/**
 * Group commit on the writer connection: creates queue up and are committed together. When the
 * writer is free it takes every queued create (up to MAX_WRITES_PER_COMMIT), opens one
 * transaction (BEGIN IMMEDIATE), runs each create in a savepoint of its own, COMMITs once (one
 * fsync for all of them), and only then acknowledges each. A create that fails is rolled back to
 * its savepoint and rejected alone; the others commit. Nothing is acknowledged before its COMMIT
 * has returned, so every acknowledged create is durable, exactly as with one transaction per
 * create. A lone create is committed at once (no waiting for company); creates arriving while a
 * commit is in progress form the next batch. A failed batch stored nothing; the next one tries
 * again, so writes resume by themselves once a storage fault clears.
 */
export class GroupCommit {
  private readonly queue: PendingWrite[] = [];
  /** The running flush (batches until the queue is empty), if any. */
  private flushing: Promise<void> | undefined;
  private readonly counters: CommitStats = { commits: 0, writes: 0 };
  private readonly writer: sqlite3.Database;
  /** The database file's directory: where a read-only file system is recognised (faults.ts). */
  private readonly dir: string;
  private readonly batchSizes: { observe(writes: number): void } | undefined;

  constructor(writer: sqlite3.Database, dir: string, batchSizes?: { observe(writes: number): void }) {
    this.writer = writer;
    this.dir = dir;
    this.batchSizes = batchSizes;
  }

  /** Queues `work` for the next batch; settles after that batch's COMMIT (or its failure). */
  enqueue<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      // Started on the next turn of the event loop, so creates that arrived together share the batch.
      this.flushing ??= new Promise<void>((started) => setImmediate(started)).then(() => this.flush());
    });
  }

  /** Resolves once every queued create is committed (or refused). */
  async drain(): Promise<void> {
    await this.flushing;
  }

  stats(): CommitStats {
    return { ...this.counters };
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.commitBatch(this.queue.splice(0, MAX_WRITES_PER_COMMIT));
    } finally {
      this.flushing = undefined;
    }
  }

  /** One transaction for `batch`: each write in a savepoint, one COMMIT, then every acknowledgement. */
  private async commitBatch(batch: PendingWrite[]): Promise<void> {
    const outcomes: Outcome[] = [];
    /** Set when the transaction as a whole is lost: then nothing of the batch was committed. */
    let lost: { error: unknown } | undefined;
    try {
      await run(this.writer, "BEGIN IMMEDIATE");
    } catch (error) {
      // Classified once for the batch (an I/O error probes the file system), not once per write.
      const failure = toStorageError(error, this.dir);
      for (const write of batch) write.reject(failure);
      return;
    }
    for (const write of batch) {
      try {
        await run(this.writer, "SAVEPOINT pet_write");
      } catch (error) {
        lost = { error };
        break;
      }
      try {
        const value = await write.work();
        await run(this.writer, "RELEASE pet_write");
        outcomes.push({ ok: true, value });
      } catch (error) {
        outcomes.push({ ok: false, error });
        try {
          await run(this.writer, "ROLLBACK TO pet_write");
          await run(this.writer, "RELEASE pet_write");
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
        await run(this.writer, "COMMIT");
      } catch (error) {
        lost = { error };
      }
    }
    if (lost) {
      // A failed COMMIT may already have ended the transaction; then ROLLBACK fails too, harmlessly.
      await run(this.writer, "ROLLBACK").catch(() => {});
      const failure = toStorageError(lost.error, this.dir);
      batch.forEach((write, i) => {
        const outcome = outcomes[i];
        write.reject(outcome && !outcome.ok ? outcome.error : failure);
      });
      return;
    }
    this.counters.commits += 1;
    this.counters.writes += batch.length;
    this.batchSizes?.observe(batch.length);
    batch.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(outcome.error);
    });
  }
}
