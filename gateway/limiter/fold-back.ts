/**
 * Folding back into Redis what a replica admitted from memory during an outage (fallback-store.ts
 * says when): once per subject, a second caller waits for the same fold, and a sweep folds every
 * remembered subject whose node is back, a few at a time.
 */
import type { Logger } from "../../lib/logger.ts";
import type { FoldLedger, Unfolded } from "./fold-ledger.ts";
import { FoldNotRunError, type RedisStore } from "./redis-store.ts";

/** Folds in flight at once when an outage ends (each is one short script; the rest wait their turn). */
const FOLD_CONCURRENCY = 8;

export interface FoldBackOptions {
  primary: Pick<RedisStore, "fold">;
  ledger: FoldLedger;
  logger: Logger;
  /** Whether `subject`'s node takes commands again (the sweep skips the others). */
  ready: (subject: string) => boolean;
  /** A sweep's fold failed (the subject's node is down again). */
  failed: (subject: string, err: unknown) => void;
}

export interface FoldBack {
  /**
   * Tells Redis what memory admitted for `subject`, once; rejects when the fold failed. Undefined
   * when there is nothing to fold (most requests: no tick spent awaiting).
   */
  foldOf(subject: string): Promise<void> | undefined;
  /** Folds every remembered subject whose node is ready; a call during a sweep runs another after it. */
  foldPending(): Promise<void>;
}

export function foldBack(opts: FoldBackOptions): FoldBack {
  const { primary, ledger, logger } = opts;
  /** Subjects whose fold is in flight. */
  const folding = new Map<string, Promise<void>>();

  function foldOf(subject: string): Promise<void> | undefined {
    const running = folding.get(subject);
    if (running) return running;
    const unfolded = ledger.take(subject);
    if (!unfolded) return undefined;
    const done = fold(subject, unfolded).finally(() => folding.delete(subject));
    folding.set(subject, done);
    return done;
  }

  // The script counts one number into every window it is given: one call per distinct count (a
  // single call unless the outage outlasted a window). A fold Redis surely did not run is kept for
  // the next try; one whose reply was lost is not (it may have run: never counted twice).
  async function fold(subject: string, { windows, counts }: Unfolded): Promise<void> {
    let left = counts;
    for (const n of new Set(counts.filter((c) => c > 0))) {
      const folded = left.map((c) => (c === n ? 0 : c));
      try {
        await primary.fold(subject, counts.every((c) => c === n) ? windows : windows.filter((_, i) => counts[i] === n), n);
      } catch (err) {
        const mayHaveRun = !(err instanceof FoldNotRunError);
        if (mayHaveRun) logger.warn({ err, requests: n }, "a fold's reply was lost: not retried, so redis may miss requests admitted from memory");
        ledger.restore(subject, { windows, counts: mayHaveRun ? folded : left });
        throw err;
      }
      left = folded;
    }
  }

  let sweep: Promise<void> | undefined;
  let again = false;
  function foldPending(): Promise<void> {
    if (sweep) {
      again = true;
      return sweep;
    }
    if (ledger.size() === 0) return Promise.resolve();
    sweep = (async () => {
      do {
        again = false;
        const queue = ledger.subjects();
        const worker = async () => {
          for (let subject = queue.pop(); subject !== undefined; subject = queue.pop()) {
            if (!opts.ready(subject) || folding.has(subject)) continue;
            await foldOf(subject)?.catch((err: unknown) => opts.failed(subject, err));
          }
        };
        await Promise.all(Array.from({ length: Math.min(FOLD_CONCURRENCY, queue.length) }, worker));
      } while (again);
    })().finally(() => (sweep = undefined));
    return sweep;
  }

  return { foldOf, foldPending };
}
