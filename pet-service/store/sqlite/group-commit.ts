import { context, type Context } from "@opentelemetry/api";
import type { LatencySeries } from "../../../lib/openmetrics.ts";
import { errorOf, type WorkerCalls } from "../../../lib/worker-calls.ts";
import { endQuerySpan, querySpan } from "../query-span.ts";
import type { BatchResult, QueryTiming, WriteOutcome, WriteRequest } from "./commit-batch.ts";

/** Creates committed together in one transaction, at most (bounds a transaction's length). */
export const MAX_WRITES_PER_COMMIT = 256;

/** A create waiting for the next group commit. */
interface PendingWrite {
  request: WriteRequest;
  /** Its request's context: its statements' spans are children of its call's span. */
  context: Context;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** Group-commit counters, for tests and operators. */
export interface CommitStats {
  /** Transactions committed. */
  commits: number;
  /** Creates acknowledged after those commits (replays and refused keys included). */
  writes: number;
}

export interface GroupCommitOptions {
  /** The creates of each batch, observed after its commit. */
  batchSizes?: { observe(writes: number): void };
  /** insert_pet's latency series, when metrics are on. */
  insertTimer?: LatencySeries;
  /** An error as the caller wants a create rejected with (a storage fault as StorageUnavailableError). */
  classify(error: Error): unknown;
}

/**
 * Group commit: creates queue up here, on the main thread, and are committed together by the
 * writer in its worker thread (commit-batch.ts). When the writer is free it takes every queued
 * create (up to MAX_WRITES_PER_COMMIT) as one batch: one transaction, one fsync. Each create is
 * acknowledged only after that COMMIT has returned, so every acknowledged create is durable,
 * exactly as with one transaction per create. A lone create is committed at once (no waiting for
 * company); creates arriving while a commit is in progress form the next batch. A failed batch
 * stored nothing; the next one tries again, so writes resume by themselves once a storage fault
 * clears.
 */
export class GroupCommit {
  private readonly queue: PendingWrite[] = [];
  /** The running flush (batches until the queue is empty), if any. */
  private flushing: Promise<void> | undefined;
  private readonly counters: CommitStats = { commits: 0, writes: 0 };
  private readonly writer: WorkerCalls<WriteRequest[], BatchResult>;
  private readonly options: GroupCommitOptions;

  constructor(writer: WorkerCalls<WriteRequest[], BatchResult>, options: GroupCommitOptions) {
    this.writer = writer;
    this.options = options;
  }

  /** Queues `request` for the next batch; settles after that batch's COMMIT (or its failure). */
  enqueue<T>(request: WriteRequest): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ request, context: context.active(), resolve: resolve as (value: unknown) => void, reject });
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

  private async commitBatch(batch: PendingWrite[]): Promise<void> {
    let result: BatchResult;
    try {
      result = await this.writer.call(batch.map((write) => write.request));
    } catch (error) {
      // The worker itself failed (it stopped): nothing of the batch is known to be stored.
      for (const write of batch) write.reject(this.options.classify(error as Error));
      return;
    }
    // Classified once for the batch (an I/O error probes the file system), not once per write.
    const failure = result.committed ? undefined : this.options.classify(errorOf(result.error));
    if (result.committed) {
      this.counters.commits += 1;
      this.counters.writes += batch.length;
      this.options.batchSizes?.observe(batch.length);
    }
    batch.forEach((write, i) => {
      const outcome = result.outcomes[i];
      context.with(write.context, () => this.traced(outcome, result));
      if (outcome && !outcome.ok) write.reject(this.options.classify(errorOf(outcome.error)));
      else if (!result.committed) write.reject(failure);
      else write.resolve(outcome!.value);
    });
  }

  /**
   * The spans of one create's statements, and of its wait for the COMMIT (from the end of its
   * statements to the end of the batch), in its request's context; insert_pet timed.
   */
  private traced(outcome: WriteOutcome | undefined, result: BatchResult): void {
    if (!outcome) return;
    for (const q of outcome.queries) timedQuery(q, q.query === "insert_pet" ? this.options.insertTimer : undefined);
    const last = outcome.queries.at(-1);
    if (outcome.ok && last) timedQuery({ query: "commit", start: last.end, end: result.endedAt, ...(!result.committed && { failed: true }) });
  }
}

function timedQuery({ query, start, end, failed }: QueryTiming, timer?: LatencySeries): void {
  const span = querySpan("sqlite", query, start);
  timer?.observe((end - start) / 1000, span);
  endQuerySpan(span, failed === true, end);
}
